import Foundation
import RetractKit

/// A piece of a retraction's work, claimed from the queue by one worker.
package struct ClaimedWorkItem: Hashable, Sendable {
    package enum Kind: Hashable, Sendable {
        /// The retraction's devices with `after < token <= through` (nil: unbounded).
        case page(after: DeviceToken?, through: DeviceToken?)
        /// One device to send to again.
        case push(DeviceReferences)
    }

    package var id: Int64
    package var retractionID: UUID
    package var kind: Kind
    /// Pushes to its devices so far, this claim's included: for a `push`
    /// item, the attempt number that sets its backoff.
    package var attempts: Int
    /// Claims of this row that did not finish it, this one included; past
    /// ``EngineSettings/itemAttempts`` the item is given up.
    package var claims: Int
    /// This claim; only it can finish, split or release the item.
    package var claim: UUID
    /// When the claim lapses and the item is due again for any worker.
    package var leaseEnds: Date
    /// Why the item's last attempt did not finish it, if one did not.
    package var lastError: String?
    /// For a `push` item: when its device was first answered with a
    /// retryable error; the retry budget runs from then.
    package var firstFailedAt: Date?
    /// Since when the item's devices have been waiting, without a break, for
    /// a service that could not be reached.
    package var waitingSince: Date?
    /// Whether its retraction was being cancelled (or was cancelled) when
    /// the item was claimed: the worker gives it back to be dropped,
    /// whatever it heard or remembers of the retraction.
    package var retractionCancelled: Bool

    package init(
        id: Int64, retractionID: UUID, kind: Kind, attempts: Int, claim: UUID, leaseEnds: Date, claims: Int = 1, lastError: String? = nil,
        firstFailedAt: Date? = nil, waitingSince: Date? = nil, retractionCancelled: Bool = false
    ) {
        self.retractionCancelled = retractionCancelled
        self.id = id
        self.retractionID = retractionID
        self.kind = kind
        self.attempts = attempts
        self.claims = claims
        self.claim = claim
        self.leaseEnds = leaseEnds
        self.lastError = lastError
        self.firstFailedAt = firstFailedAt
        self.waitingSince = waitingSince
    }
}

/// Why a claimed item goes back to the queue unfinished.
package enum ReleaseReason: Hashable, Sendable {
    /// The worker is stopping: due at once, and the claim does not count as an attempt.
    case stopping
    /// The database connection dropped while the item was worked on: due at
    /// once, and the claim does not count as an attempt.
    case interrupted(String)
    /// Working on it failed (the database refused a write, say): due after
    /// the delay, and the claim counts as an attempt.
    case failed(String, retryAfter: Duration)
    /// Its service could not be reached: its `devices` wait for it, due
    /// after the delay; the claim does not count as an attempt.
    case unreachable(String, devices: Int, retryAfter: Duration)
    /// Its retraction's cancel was announced and has not yet held: due
    /// after a second, by when it has, and the claim does not count as an
    /// attempt. Dropped when the retraction is being cancelled, as for
    /// every reason.
    case cancelAnnounced
}

extension ReleaseReason {
    /// What releasing an item for this reason does to it: due again after
    /// `delay`; the claim counted as an attempt or not; the error it keeps;
    /// the devices now waiting for their service (nil: as they were; 0: the
    /// wait is over, the item was worked on and its service answered).
    package var effect: (delay: Duration, countsAsAttempt: Bool, error: String, waiting: Int?) {
        switch self {
        case .stopping: (.zero, false, "released by a stopping worker", nil)
        case .interrupted(let error): (.zero, false, error, nil)
        case .failed(let error, let delay): (delay, true, error, 0)
        case .unreachable(let error, let devices, let delay): (delay, false, error, devices)
        case .cancelAnnounced: (.seconds(1), false, "its retraction's cancel was announced", nil)
        }
    }
}

/// A run of a claimed page's devices that could not be sent because their
/// service could not be reached: queued as a page of its own, due after
/// `delay`.
package struct PageRemainder: Hashable, Sendable {
    /// The remainder covers the tokens after this one (nil: from the start
    /// of a page that had no lower bound)...
    package var after: DeviceToken?
    /// ...up to this one (nil: the page had no upper bound).
    package var through: DeviceToken?
    /// Devices in it, all waiting for the service.
    package var waiting: Int
    package var delay: Duration
    /// The service's connection error; the devices wait from now.
    package var reason: String

    package init(after: DeviceToken?, through: DeviceToken?, waiting: Int, delay: Duration, reason: String) {
        self.after = after
        self.through = through
        self.waiting = waiting
        self.delay = delay
        self.reason = reason
    }
}

extension PageRemainder {
    /// Whether `token` lies in the remainder's range.
    package func covers(_ token: DeviceToken) -> Bool {
        (after.map { token > $0 } ?? true) && (through.map { token <= $0 } ?? true)
    }
}

/// A device to send to again later.
package struct PushRetry: Hashable, Sendable {
    package var device: DeviceReferences
    /// How long after the item is finished the retry is due, by the
    /// database's clock (`clock_timestamp()` when the retry is written):
    /// workers on machines whose clocks disagree agree on it.
    package var delay: Duration
    /// Attempts made so far; the next claim counts one more.
    package var attempts: Int
    package var lastError: String
    /// When the device was first answered with a retryable error.
    package var failingSince: Date

    package init(device: DeviceReferences, delay: Duration, attempts: Int, lastError: String, failingSince: Date = Date()) {
        self.device = device
        self.delay = delay
        self.attempts = attempts
        self.lastError = lastError
        self.failingSince = failingSince
    }
}

extension WorkResult {
    /// The result of giving up on `item`: its devices count as failed with
    /// `reason`; those of a page known dead (`dead`, of its `devices`), as
    /// dead and skipped, as a page read would have counted them. A push
    /// item's one device leaves `retrying`.
    package static func givingUp(_ item: ClaimedWorkItem, reason: String, devices: Int, dead: Int) -> WorkResult {
        var counts = RetractionCounts()
        switch item.kind {
        case .push:
            counts.failed = 1
            counts.retrying = -1
        case .page:
            counts.failed = devices - dead
            counts.dead = dead
            counts.skipped = dead
        }
        return WorkResult(item: item, counts: counts, failures: counts.failed > 0 ? [reason: counts.failed] : [:])
    }
}

/// What finishing one claimed item does, all in the transaction that deletes it.
package struct WorkResult: Hashable, Sendable {
    package var item: ClaimedWorkItem
    /// Added to the retraction's counts.
    package var counts: RetractionCounts
    /// Added to the retraction's pushes.
    package var pushes: PushesSent
    /// Devices to send to again.
    package var retries: [PushRetry]
    /// Tokens APNs said are dead.
    package var deadTokens: [DeadToken]
    /// Devices given up on, by reason; added to the retraction's account.
    package var failures: [String: Int]
    /// When set, the retraction stops here: `failed` with this reason, its
    /// other queued work dropped (the app's credentials were refused, say).
    package var stopReason: String?
    /// The runs of a page's devices not sent because their service could
    /// not be reached: the counts are the rest of the page's.
    package var remainders: [PageRemainder]

    package init(
        item: ClaimedWorkItem, counts: RetractionCounts = RetractionCounts(), pushes: PushesSent = PushesSent(), retries: [PushRetry] = [],
        deadTokens: [DeadToken] = [], failures: [String: Int] = [:], stopReason: String? = nil, remainders: [PageRemainder] = []
    ) {
        self.item = item
        self.counts = counts
        self.pushes = pushes
        self.retries = retries
        self.deadTokens = deadTokens
        self.failures = failures
        self.stopReason = stopReason
        self.remainders = remainders
    }
}
