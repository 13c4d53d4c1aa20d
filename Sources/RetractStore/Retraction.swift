import Foundation
import RetractKit

/// A request to take back one or more notifications of an app, and what has
/// become of it.
public struct Retraction: Hashable, Sendable {
    public enum State: String, Hashable, Sendable, Codable {
        /// Made, no push sent yet.
        case queued
        /// Pushes are going out.
        case sending
        /// Every device was sent to, found dead, or given up on.
        case done
        /// Stopped before the end; ``Retraction/failure`` says why.
        case failed
    }

    public var id: UUID
    public var appID: Int64
    public var references: [ReferenceID]
    public var requestedBy: String
    public var reason: String?
    public var dryRun: Bool
    public var state: State
    public var failure: String?
    public var counts: RetractionCounts
    /// Why the devices counted in ``RetractionCounts/waiting`` wait: the
    /// service's connection error, such as "cannot connect to APNs: …".
    public var waitingReason: String?
    public var createdAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    public var updatedAt: Date
}

/// The devices of a retraction and what became of them; also used as a change
/// to apply to those counts.
public struct RetractionCounts: Hashable, Sendable, Codable {
    /// Devices found when the retraction was made.
    public var total: Int
    /// Devices whose push APNs accepted.
    public var sent: Int
    /// Devices whose token the push service said is dead, and devices
    /// skipped because their token was known dead (``skipped``).
    public var dead: Int
    /// Devices waiting for another attempt.
    public var retrying: Int
    /// Devices given up on.
    public var failed: Int
    /// Of ``dead``, the devices not sent to because their token was known
    /// dead and no delivery of the retraction's references was newer than
    /// its death. In a dry run, the devices the retraction would skip.
    public var skipped: Int
    /// Of the pending devices, those whose push could not reach the service
    /// at their last attempt: they wait for it to come back. Read from the
    /// queue, not a change a finished item applies.
    public var waiting: Int

    public init(total: Int = 0, sent: Int = 0, dead: Int = 0, retrying: Int = 0, failed: Int = 0, skipped: Int = 0, waiting: Int = 0) {
        self.total = total
        self.sent = sent
        self.dead = dead
        self.retrying = retrying
        self.failed = failed
        self.skipped = skipped
        self.waiting = waiting
    }

    /// Devices not yet settled: neither sent, dead nor failed.
    public var pending: Int { max(total - sent - dead - failed, 0) }

    /// Whether every device is settled: sent, dead or failed. A `done`
    /// retraction whose deliveries were all kept meets it.
    public var isSettled: Bool { sent + dead + failed == total }

    public static func + (lhs: RetractionCounts, rhs: RetractionCounts) -> RetractionCounts {
        RetractionCounts(
            total: lhs.total + rhs.total, sent: lhs.sent + rhs.sent, dead: lhs.dead + rhs.dead,
            retrying: lhs.retrying + rhs.retrying, failed: lhs.failed + rhs.failed, skipped: lhs.skipped + rhs.skipped,
            waiting: lhs.waiting + rhs.waiting)
    }

    public static func += (lhs: inout RetractionCounts, rhs: RetractionCounts) { lhs = lhs + rhs }
}

/// What asking for a retraction takes.
public struct RetractionRequest: Hashable, Sendable {
    public var appID: Int64
    public var references: [ReferenceID]
    /// Who asked: an API key's name, a user at a terminal.
    public var requestedBy: String
    public var reason: String?
    /// Count the devices, send nothing.
    public var dryRun: Bool
    /// The same key with the same request returns the first retraction; with
    /// another request it is ``StoreError/Code/idempotencyConflict``.
    public var idempotencyKey: String?

    public init(
        appID: Int64, references: [ReferenceID], requestedBy: String, reason: String? = nil, dryRun: Bool = false,
        idempotencyKey: String? = nil
    ) {
        self.appID = appID
        self.references = references
        self.requestedBy = requestedBy
        self.reason = reason
        self.dryRun = dryRun
        self.idempotencyKey = idempotencyKey
    }

    /// The most references one retraction may name.
    public static let maximumReferences = 1000
}
