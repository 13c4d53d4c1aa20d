import Foundation
import RetractKit
import RetractModel

/// What sending one work item's devices came to: one result per device, in
/// the order they were given, and what stopped the sending early.
package struct Sending: Hashable, Sendable {
    /// What became of one device's pushes.
    package struct Device: Hashable, Sendable {
        package var outcome: PushOutcome
        /// How many of its pushes the service accepted.
        package var pushes: Int
        /// The earlier retractions' references its pushes carried, and those left out.
        package var history: HistoryCarried

        package init(_ outcome: PushOutcome, pushes: Int = 0, history: HistoryCarried = HistoryCarried()) {
            self.outcome = outcome
            self.pushes = pushes
            self.history = history
        }
    }

    /// One per device, in order; nil for a device not sent to (sending stopped before it).
    package var devices: [Device?]
    /// Set when the app's credentials could not be used or were refused:
    /// the retraction stops, and its account says why.
    package var stopReason: String?
    /// Set when a push could not reach its service: the devices from there
    /// on wait for it to come back.
    package var unreachable: String?
    /// Another lane stopped the retraction while this one was sending.
    package var interruptedByStop: Bool
    /// The retraction was cancelled while this lane was sending: no more
    /// pushes started, and the devices not sent to are spared.
    package var interruptedByCancel = false

    package init(devices: [Device?], stopReason: String? = nil, unreachable: String? = nil, interruptedByStop: Bool = false) {
        self.devices = devices
        self.stopReason = stopReason
        self.unreachable = unreachable
        self.interruptedByStop = interruptedByStop
    }

    /// `count` devices, none sent to yet.
    package init(count: Int) {
        self.init(devices: Array(repeating: nil, count: count))
    }
}

/// What a claimed item's sending means for the ledger, decided without it:
/// which devices are settled and how (a ``Tally``), which runs of a page wait
/// for a service that could not be reached, and when the item goes back to
/// the queue instead. Pure: the time is passed in, and it is tested like
/// ``ConnectionSlots``, without a database or a socket.
package enum Settlement: Hashable, Sendable {
    /// Why the rest of a page was queued again: a cancel was announced
    /// while it was sending (the cancel, if it holds, drops it).
    package static let interruptedByCancel = "sending stopped for a cancel"

    /// Give the item back unfinished.
    case release(ReleaseReason)
    /// Finish the item with this result, in one transaction.
    case finish(WorkResult)

    /// How a page item's sending settles. Every device the service answered
    /// for is settled, wherever it lies in the page: a pool whose
    /// connections come back one by one answers some of a burst and not
    /// the rest, and sending an answered device again would push it twice.
    /// Each run of devices it was not reached for waits for it, as a page
    /// of its own (a ``PageRemainder``); a page not reached at all goes back
    /// whole. Dead tokens the page skipped are counted, but those inside a
    /// remainder only when it is read.
    ///
    /// - Parameters:
    ///   - after: the page's lower bound, as claimed.
    ///   - end: its upper bound once split (``split(_:through:)``).
    package static func page(
        _ item: ClaimedWorkItem, after: DeviceToken?, through end: DeviceToken?, page: DevicePage, sending: Sending,
        retryBudget: Duration, now: Date
    ) -> Settlement {
        if sending.interruptedByStop { return .release(.stopping) }
        var remainders: [PageRemainder] = []
        if sending.stopReason == nil, let reason = sending.unreachable {
            let delay = outageRetryDelay(for: item, now: now)
            let runs = unansweredRuns(sending.devices)
            if runs == [0..<page.devices.count] {
                return .release(.unreachable(reason, devices: page.devices.count, retryAfter: delay))
            }
            remainders = runs.map { run in
                PageRemainder(
                    after: run.lowerBound == 0 ? after : page.devices[run.lowerBound - 1].token,
                    through: run.upperBound == page.devices.count ? end : page.devices[run.upperBound - 1].token,
                    waiting: run.count, delay: delay, reason: reason)
            }
        } else if sending.interruptedByCancel, let first = sending.devices.firstIndex(where: { $0 == nil }) {
            // Sending stopped at the cancel's first word. The devices not sent to are spared when the
            // cancel holds (the ledger queues nothing for it), and sent to later when it did not.
            remainders = [
                PageRemainder(
                    after: first == 0 ? after : page.devices[first - 1].token, through: end, waiting: 0, delay: .zero,
                    reason: Self.interruptedByCancel)
            ]
        }
        var tally = Tally(budget: retryBudget)
        for (index, device) in page.devices.enumerated() {
            // Those in a remainder are counted when it is sent.
            guard let sent = sending.devices[index], remainders.isEmpty || !isUnanswered(sent) else { continue }
            tally.add(
                sent.outcome, for: device, pushes: sent.pushes, history: sent.history, attempt: 1, isRetry: false, failingSince: nil,
                now: now)
        }
        let skipped = page.skipped.filter { token in !remainders.contains { $0.covers(token) } }.count
        tally.counts.dead += skipped
        tally.counts.skipped += skipped
        return .finish(tally.result(for: item, stopReason: sending.stopReason, remainders: remainders))
    }

    /// How a queued retry of one device settles. The time it waited for a
    /// service that could not be reached does not count against its retry
    /// budget.
    package static func push(
        _ item: ClaimedWorkItem, device: DeviceReferences, sending: Sending, retryBudget: Duration, now: Date
    ) -> Settlement {
        if sending.interruptedByStop { return .release(.stopping) }
        // Not sent for a cancel: the ledger drops the item when the cancel holds, and queues it again when it did not.
        if sending.interruptedByCancel, sending.devices.first ?? nil == nil { return .release(.stopping) }
        if sending.stopReason == nil, let reason = sending.unreachable {
            return .release(.unreachable(reason, devices: 1, retryAfter: outageRetryDelay(for: item, now: now)))
        }
        var tally = Tally(budget: retryBudget)
        if let sent = sending.devices.first ?? nil {
            let failingSince = item.firstFailedAt.map { first in
                item.waitingSince.map { first.addingTimeInterval(now.timeIntervalSince($0)) } ?? first
            }
            tally.add(
                sent.outcome, for: device, pushes: sent.pushes, history: sent.history, attempt: item.attempts, isRetry: true,
                failingSince: failingSince, now: now)
        }
        return .finish(tally.result(for: item, stopReason: sending.stopReason))
    }

    /// A queued retry whose token was found dead after its retraction was
    /// made (by another retraction, say): counted dead, not sent again.
    package static func retryFoundDead(_ item: ClaimedWorkItem) -> Settlement {
        .finish(WorkResult(item: item, counts: RetractionCounts(dead: 1, retrying: -1)))
    }

    /// Where a page read of `page` ends: at its last device when it was
    /// full (the rest of the range becomes an item of its own, split off at
    /// `splitAt`), else where the claim said.
    package static func split(_ page: DevicePage, through: DeviceToken?) -> (splitAt: DeviceToken?, end: DeviceToken?) {
        guard page.mayHaveMore, let last = page.last else { return (nil, through) }
        return (last, last)
    }

    /// When an item that could not reach its service is due again: after
    /// half of its wait so far, from 1 to 15 s.
    package static func outageRetryDelay(for item: ClaimedWorkItem, now: Date) -> Duration {
        EngineSettings.outageRetryDelay(afterWaiting: item.waitingSince.map { .seconds(now.timeIntervalSince($0)) } ?? .zero)
    }

    /// Whether a device's push did not reach its service: no answer, or
    /// `unreachable`.
    package static func isUnanswered(_ sent: Sending.Device?) -> Bool {
        guard let sent else { return true }
        if case .unreachable = sent.outcome { return true }
        return false
    }

    /// The runs of consecutive devices, in the page's token order, whose
    /// push did not reach its service.
    package static func unansweredRuns(_ devices: [Sending.Device?]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start: Int?
        for (index, sent) in devices.enumerated() {
            if isUnanswered(sent) {
                if start == nil { start = index }
            } else if let first = start {
                runs.append(first..<index)
                start = nil
            }
        }
        if let first = start { runs.append(first..<devices.count) }
        return runs
    }
}

/// The rules for a claimed item that are not about its devices: when it is
/// given up rather than worked, and how it goes back to the queue when its
/// work ended without a result. Pure: the time is passed in.
package struct ItemRules: Sendable {
    /// How long a claim lasts without news; the worker moves it on every third.
    package var lease: Duration
    /// Claims of an item that did not finish it, after which it is given up.
    package var itemAttempts: Int
    /// How long an item may wait for its service before it is given up.
    package var outageLimit: Duration

    package init(lease: Duration, itemAttempts: Int, outageLimit: Duration) {
        self.lease = lease
        self.itemAttempts = itemAttempts
        self.outageLimit = outageLimit
    }

    package init(_ settings: EngineSettings) {
        self.init(lease: settings.lease, itemAttempts: settings.itemAttempts, outageLimit: settings.outageLimit)
    }

    /// How often the claim is moved on: three times a lease, so that one
    /// failed extension is tried again before the claim lapses.
    package var extensionInterval: Duration { lease / 3 }

    /// Why an item is given up rather than worked, if it is: it was claimed
    /// more than ``itemAttempts`` times without being finished, or has
    /// waited longer than ``outageLimit`` for its service.
    package func giveUpReason(for item: ClaimedWorkItem, now: Date) -> String? {
        if item.claims > itemAttempts {
            let last = item.lastError ?? "each claim ended without a result (the worker died, or lost its lease)"
            return "given up after \(item.claims - 1) attempts: \(last)"
        }
        if let since = item.waitingSince, now.timeIntervalSince(since) > outageLimit.inSeconds {
            return "the service could not be reached for \(outageLimit.spoken): \(item.lastError ?? "no connection")"
        }
        return nil
    }

    /// How an item whose work ended without a result goes back to the queue.
    package enum GiveBack: Hashable, Sendable {
        /// Release it now, with this reason.
        case release(ReleaseReason)
        /// The database connection dropped: release it with this reason
        /// once the database answers, waiting at most `for`.
        case onceReconnected(ReleaseReason, for: Duration)
    }

    /// The stop of a worker, or a dropped connection, does not count as an
    /// attempt: a dropped connection is waited out, as long as the claim
    /// lasts (past it, another worker may hold the item), or not at all by
    /// a worker that is stopping. Any other failure is an attempt, due again
    /// after a backoff of 1 s doubling per claim, at most a lease: a poison
    /// item is given up within minutes.
    ///
    /// - Parameter failure: what ended the work; nil when the worker is stopping.
    package func giveBack(_ item: ClaimedWorkItem, after failure: StoreError?, draining: Bool) -> GiveBack {
        guard let failure else { return .release(.stopping) }
        guard failure.code == .connectionLost else {
            let backoff = min(Duration.seconds(1 << min(max(item.claims - 1, 0), 10)), lease)
            return .release(.failed(failure.message, retryAfter: backoff))
        }
        return .onceReconnected(.interrupted(failure.message), for: draining ? .zero : lease)
    }
}

extension Tally {
    /// The result that finishes `item` with what was tallied.
    package func result(for item: ClaimedWorkItem, stopReason: String?, remainders: [PageRemainder] = []) -> WorkResult {
        WorkResult(
            item: item, counts: counts, pushes: pushes, retries: retries, deadTokens: dead, failures: failures, stopReason: stopReason,
            remainders: remainders)
    }
}
