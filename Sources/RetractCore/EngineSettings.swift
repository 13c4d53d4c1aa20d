/// How hard and in what steps the engine works.
package struct EngineSettings: Sendable, Hashable {
    /// The most pushes in flight at once in one process, across everything
    /// it sends: the memory it may give them. Within it, each app's window
    /// through each service sizes itself to the round trip
    /// (``WindowSizer``), from 400 up.
    package var window: Int
    /// Where each app's window starts, and the least it goes back to: the
    /// fixed window of earlier versions, enough at loopback's round trip.
    package var smallestWindow: Int
    /// Devices read from the ledger per work item. A worker killed mid-item
    /// makes its successor send that item's devices again, so at most
    /// `lanes × pageSize` devices get a duplicate push after a crash.
    package var pageSize: Int
    /// The most work items one process works on at once. Four always are;
    /// more as the largest window grows, to keep it full.
    package var lanes: Int
    /// How long a claimed item stays this worker's without news; kept alive
    /// while the worker is busy with it, so it only lapses when the worker dies.
    package var lease: Duration
    /// How long a worker with nothing due waits before looking again, when
    /// no notification of new work woke it sooner: it finds work due later
    /// (retries, backoffs, lapsed leases) and work whose notification was lost.
    package var idlePoll: Duration
    /// Devices recorded per statement when sending originals or recording.
    package var recordBatch: Int
    /// How long a device answered with retryable errors (429, 5xx, a lost
    /// connection) is tried again, from its first such answer; then it is
    /// failed. Time a service could not be reached at all does not count.
    package var retryBudget: Duration
    /// Claims of one work item before it is given up, its devices counted
    /// failed: an item that crashes its worker or whose result the database
    /// refuses every time must not be sent again forever. A claim cut short by
    /// a lost database connection or a stopping worker does not count.
    package var itemAttempts: Int
    /// How long devices wait, without a break, for a service that cannot be
    /// reached before they are failed.
    package var outageLimit: Duration
    /// How long a push answered with a retryable error waits before it is sent again.
    package var retryPolicy: RetryPolicy
    /// How far back a device's earlier retractions in the same app ride along
    /// in its retraction pushes (the newest that fit the body), so that
    /// whichever push reaches the phone last removes them all; zero for none.
    package var historyWindow: Duration

    package init(
        window: Int = 5000,
        smallestWindow: Int = 400,
        pageSize: Int = 500,
        lanes: Int = 16,
        lease: Duration = .seconds(60),
        idlePoll: Duration = .seconds(1),
        recordBatch: Int = 1000,
        retryBudget: Duration = .seconds(30 * 60),
        itemAttempts: Int = 8,
        outageLimit: Duration = .seconds(24 * 60 * 60),
        retryPolicy: RetryPolicy = RetryPolicy(),
        historyWindow: Duration = .seconds(24 * 60 * 60)
    ) {
        self.window = window
        self.smallestWindow = smallestWindow
        self.pageSize = pageSize
        self.lanes = lanes
        self.lease = lease
        self.idlePoll = idlePoll
        self.recordBatch = recordBatch
        self.retryBudget = retryBudget
        self.itemAttempts = itemAttempts
        self.outageLimit = outageLimit
        self.retryPolicy = retryPolicy
        self.historyWindow = historyWindow
    }

    /// How long work that could not reach its service waits before the next
    /// try, after waiting `waited` so far: 1 s at first, half the wait so far
    /// later, at most 15 s, so a long outage costs few tries and the work
    /// goes on soon after the service is back.
    package static func outageRetryDelay(afterWaiting waited: Duration) -> Duration {
        min(max(waited / 2, .seconds(1)), .seconds(15))
    }

    /// The first setting that cannot work, naming it, or nil.
    package var problem: String? {
        if window < 1 || window > 100_000 { return "window \(window): 1 to 100000 pushes in flight" }
        if smallestWindow < 1 { return "smallest window \(smallestWindow): at least 1 push in flight" }
        if pageSize < 1 || pageSize > 10_000 { return "page size \(pageSize): 1 to 10000 devices" }
        if lanes < 1 || lanes > 64 { return "lanes \(lanes): 1 to 64" }
        if lease < .seconds(1) { return "lease \(lease): at least one second" }
        if recordBatch < 1 || recordBatch > 10_000 { return "record batch \(recordBatch): 1 to 10000" }
        if retryBudget < .zero || retryBudget > .seconds(7 * 24 * 3600) { return "retry budget \(retryBudget): 0 to 7 days" }
        if itemAttempts < 1 || itemAttempts > 1000 { return "item attempts \(itemAttempts): 1 to 1000" }
        if outageLimit < .seconds(1) || outageLimit > .seconds(30 * 24 * 3600) { return "outage limit \(outageLimit): 1 second to 30 days" }
        if historyWindow < .zero || historyWindow > .seconds(7 * 24 * 3600) { return "history window \(historyWindow): 0 to 7 days" }
        return nil
    }
}
