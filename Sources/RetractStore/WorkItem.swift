import Foundation
import RetractKit

/// A piece of a retraction's work, claimed from the queue by one worker.
public struct ClaimedWorkItem: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// The retraction's devices with `after < token <= through` (nil: unbounded).
        case page(after: DeviceToken?, through: DeviceToken?)
        /// One device to send to again.
        case push(DeviceReferences)
    }

    public var id: Int64
    public var retractionID: UUID
    public var kind: Kind
    /// Pushes to its devices so far, this claim's included: for a `push`
    /// item, the attempt number that sets its backoff.
    public var attempts: Int
    /// Claims of this row that did not finish it, this one included; past
    /// ``EngineSettings/itemAttempts`` the item is given up.
    public var claims: Int
    /// This claim; only it can finish, split or release the item.
    public var claim: UUID
    /// When the claim lapses and the item is due again for any worker.
    public var leaseEnds: Date
    /// Why the item's last attempt did not finish it, if one did not.
    public var lastError: String?
    /// For a `push` item: when its device was first answered with a
    /// retryable error; the retry budget runs from then.
    public var firstFailedAt: Date?
    /// Since when the item's devices have been waiting, without a break, for
    /// a service that could not be reached.
    public var waitingSince: Date?

    public init(
        id: Int64, retractionID: UUID, kind: Kind, attempts: Int, claim: UUID, leaseEnds: Date, claims: Int = 1, lastError: String? = nil,
        firstFailedAt: Date? = nil, waitingSince: Date? = nil
    ) {
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
public enum ReleaseReason: Hashable, Sendable {
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
}

/// The part of a claimed page that could not be sent because its service
/// could not be reached: queued as a page of its own, due after `delay`.
public struct PageRemainder: Hashable, Sendable {
    /// The remainder covers the tokens after this one...
    public var after: DeviceToken
    /// ...up to this one (nil: the page had no upper bound).
    public var through: DeviceToken?
    /// Devices in it, all waiting for the service.
    public var waiting: Int
    public var delay: Duration
    /// The service's connection error; the devices wait from now.
    public var reason: String

    public init(after: DeviceToken, through: DeviceToken?, waiting: Int, delay: Duration, reason: String) {
        self.after = after
        self.through = through
        self.waiting = waiting
        self.delay = delay
        self.reason = reason
    }
}

/// A device to send to again later.
public struct PushRetry: Hashable, Sendable {
    public var device: DeviceReferences
    /// How long after the item is finished the retry is due, by the
    /// database's clock (`clock_timestamp()` when the retry is written):
    /// workers on machines whose clocks disagree agree on it.
    public var delay: Duration
    /// Attempts made so far; the next claim counts one more.
    public var attempts: Int
    public var lastError: String
    /// When the device was first answered with a retryable error.
    public var failingSince: Date

    public init(device: DeviceReferences, delay: Duration, attempts: Int, lastError: String, failingSince: Date = Date()) {
        self.device = device
        self.delay = delay
        self.attempts = attempts
        self.lastError = lastError
        self.failingSince = failingSince
    }
}

/// What finishing one claimed item does, all in the transaction that deletes it.
public struct WorkResult: Hashable, Sendable {
    public var item: ClaimedWorkItem
    /// Added to the retraction's counts.
    public var counts: RetractionCounts
    /// Devices to send to again.
    public var retries: [PushRetry]
    /// Tokens APNs said are dead.
    public var deadTokens: [DeadToken]
    /// Devices given up on, by reason; added to the retraction's account.
    public var failures: [String: Int]
    /// When set, the retraction stops here: `failed` with this reason, its
    /// other queued work dropped (the app's credentials were refused, say).
    public var stopReason: String?
    /// The part of a page not sent because its service could not be
    /// reached: the counts are the rest of the page's.
    public var remainder: PageRemainder?

    public init(
        item: ClaimedWorkItem, counts: RetractionCounts = RetractionCounts(), retries: [PushRetry] = [], deadTokens: [DeadToken] = [],
        failures: [String: Int] = [:], stopReason: String? = nil, remainder: PageRemainder? = nil
    ) {
        self.item = item
        self.counts = counts
        self.retries = retries
        self.deadTokens = deadTokens
        self.failures = failures
        self.stopReason = stopReason
        self.remainder = remainder
    }
}
