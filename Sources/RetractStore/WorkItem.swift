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
    /// Claims of this item so far, this one included.
    public var attempts: Int
    /// This claim; only it can finish, split or release the item.
    public var claim: UUID
    /// When the claim lapses and the item is due again for any worker.
    public var leaseEnds: Date
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

    public init(device: DeviceReferences, delay: Duration, attempts: Int, lastError: String) {
        self.device = device
        self.delay = delay
        self.attempts = attempts
        self.lastError = lastError
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

    public init(
        item: ClaimedWorkItem, counts: RetractionCounts = RetractionCounts(), retries: [PushRetry] = [], deadTokens: [DeadToken] = [],
        failures: [String: Int] = [:], stopReason: String? = nil
    ) {
        self.item = item
        self.counts = counts
        self.retries = retries
        self.deadTokens = deadTokens
        self.failures = failures
        self.stopReason = stopReason
    }
}
