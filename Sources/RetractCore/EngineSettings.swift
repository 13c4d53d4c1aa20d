/// How hard and in what steps the engine works.
public struct EngineSettings: Sendable, Hashable {
    /// Pushes in flight at once in one process, across everything it sends.
    /// The default is 200 streams on each of the default two HTTP/2
    /// connections; APNs often grants 1,000 per connection, and a lower
    /// limit only makes the rest wait in the client.
    public var window: Int
    /// Devices read from the ledger per work item. A worker killed mid-item
    /// makes its successor send that item's devices again, so at most
    /// `lanes × pageSize` devices get a duplicate push after a crash.
    public var pageSize: Int
    /// Work items one process works on at once.
    public var lanes: Int
    /// How long a claimed item stays this worker's without news; kept alive
    /// while the worker is busy with it, so it only lapses when the worker dies.
    public var lease: Duration
    /// How long a worker with nothing due waits before looking again.
    public var idlePoll: Duration
    /// Devices recorded per statement when sending originals or recording.
    public var recordBatch: Int

    public init(
        window: Int = 400,
        pageSize: Int = 500,
        lanes: Int = 4,
        lease: Duration = .seconds(60),
        idlePoll: Duration = .milliseconds(200),
        recordBatch: Int = 1000
    ) {
        self.window = window
        self.pageSize = pageSize
        self.lanes = lanes
        self.lease = lease
        self.idlePoll = idlePoll
        self.recordBatch = recordBatch
    }

    /// The first setting that cannot work, naming it, or nil.
    public var problem: String? {
        if window < 1 || window > 100_000 { return "window \(window): 1 to 100000 pushes in flight" }
        if pageSize < 1 || pageSize > 10_000 { return "page size \(pageSize): 1 to 10000 devices" }
        if lanes < 1 || lanes > 64 { return "lanes \(lanes): 1 to 64" }
        if lease < .seconds(1) { return "lease \(lease): at least one second" }
        if recordBatch < 1 || recordBatch > 10_000 { return "record batch \(recordBatch): 1 to 10000" }
        return nil
    }
}
