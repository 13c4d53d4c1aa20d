import Foundation
import RetractKit

/// A request to take back one or more notifications of an app, and what has
/// become of it.
package struct Retraction: Hashable, Sendable {
    package enum State: String, Hashable, Sendable, Codable {
        /// Over its app's approval threshold: nothing is sent until a
        /// second key approves it (``Retraction/approval``).
        case awaitingApproval = "awaiting-approval"
        /// Made, no push sent yet.
        case queued
        /// Pushes are going out.
        case sending
        /// Every device was sent to, found dead, or given up on.
        case done
        /// Stopped before the end; ``Retraction/failure`` says why.
        case failed
        /// Cancelled (``Retraction/cancellation``): nothing more is queued,
        /// and the pages in flight are finishing their pushes.
        case cancelling
        /// Cancelled, and the pages in flight finished: the devices not
        /// reached are ``RetractionCounts/spared``.
        case cancelled
        /// Rejected by the second key: nothing was sent.
        case rejected
        /// Not approved within its app's window: nothing was sent.
        case expired

        /// Whether it has ended: nothing of it will be sent any more.
        package var isFinished: Bool {
            switch self {
            case .done, .failed, .cancelled, .rejected, .expired: true
            case .awaitingApproval, .queued, .sending, .cancelling: false
            }
        }

        /// Whether a cancel holds: `cancelling` or `cancelled`. Its work is
        /// dropped, and it takes no delivery.
        package var isCancel: Bool { self == .cancelling || self == .cancelled }
    }

    /// Who stopped a retraction before its end, why, and when.
    package struct Cancellation: Hashable, Sendable {
        package var by: String
        package var reason: String
        package var at: Date

        package init(by: String, reason: String, at: Date) {
            self.by = by
            self.reason = reason
            self.at = at
        }
    }

    /// A retraction that needed a second key's approval, and what became of it.
    package struct Approval: Hashable, Sendable {
        package enum State: String, Hashable, Sendable, Codable {
            /// Withdrawn: cancelled by the one who asked before anyone decided.
            case awaiting, approved, rejected, expired, withdrawn
        }

        package var state: State
        /// When it expires unless decided.
        package var expiresAt: Date?
        /// Who approved or rejected it, why and when.
        package var decidedBy: String?
        package var reason: String?
        package var decidedAt: Date?

        package init(state: State, expiresAt: Date?, decidedBy: String? = nil, reason: String? = nil, decidedAt: Date? = nil) {
            self.state = state
            self.expiresAt = expiresAt
            self.decidedBy = decidedBy
            self.reason = reason
            self.decidedAt = decidedAt
        }
    }

    package var id: UUID
    package var appID: Int64
    /// The references it retracts; empty for a retraction by ``selector``.
    package var references: [ReferenceID]
    /// What it retracts instead of references, with the range the ledger
    /// applied (``RetractionSelector/sentBefore`` is always set).
    package var selector: RetractionSelector?
    /// For a retraction by selector, how many references it matched when made.
    package var referencesMatched: Int?
    /// For a dry run, the most references one device would be sent.
    package var mostReferences: Int?
    package var requestedBy: String
    package var reason: String?
    package var dryRun: Bool
    package var state: State
    package var failure: String?
    /// Who cancelled it, when it was.
    package var cancellation: Cancellation?
    /// Its approval, when its app wanted one.
    package var approval: Approval?
    /// The API key that asked for it, when one did.
    package var requestedKeyID: UUID?
    package var counts: RetractionCounts
    /// The pushes its devices' services accepted so far.
    package var pushes: PushesSent
    /// Why the devices counted in ``RetractionCounts/waiting`` wait: the
    /// service's connection error, such as "cannot connect to APNs: …".
    package var waitingReason: String?
    /// How its pushes reach phones.
    package var mode: RetractionMode
    /// The app icon's badge its pushes set, if any.
    package var badge: Int?
    /// What its alerts show instead of its app's retraction text, if given.
    package var text: String?
    /// For an edit: the new text of its one reference, which its pushes
    /// carry instead of a removal (docs/api.md, "Edits").
    package var edit: NotificationEdit?
    /// For an edit: the conversation its alerts show under (`aps.thread-id`).
    package var editThread: String?
    package var createdAt: Date
    package var startedAt: Date?
    package var finishedAt: Date?
    package var updatedAt: Date

    package init(
        id: UUID, appID: Int64, references: [ReferenceID], selector: RetractionSelector? = nil, referencesMatched: Int? = nil,
        mostReferences: Int? = nil, requestedBy: String, reason: String? = nil, dryRun: Bool, state: State, failure: String? = nil,
        cancellation: Cancellation? = nil, approval: Approval? = nil, requestedKeyID: UUID? = nil, counts: RetractionCounts,
        pushes: PushesSent, waitingReason: String? = nil, mode: RetractionMode, badge: Int? = nil,
        text: String? = nil, edit: NotificationEdit? = nil, editThread: String? = nil, createdAt: Date, startedAt: Date? = nil,
        finishedAt: Date? = nil, updatedAt: Date
    ) {
        self.id = id
        self.appID = appID
        self.references = references
        self.selector = selector
        self.referencesMatched = referencesMatched
        self.mostReferences = mostReferences
        self.requestedBy = requestedBy
        self.reason = reason
        self.dryRun = dryRun
        self.state = state
        self.failure = failure
        self.cancellation = cancellation
        self.approval = approval
        self.requestedKeyID = requestedKeyID
        self.counts = counts
        self.pushes = pushes
        self.waitingReason = waitingReason
        self.mode = mode
        self.badge = badge
        self.text = text
        self.edit = edit
        self.editThread = editThread
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.updatedAt = updatedAt
    }
}

/// The devices of a retraction and what became of them; also used as a change
/// to apply to those counts.
package struct RetractionCounts: Hashable, Sendable, Codable {
    /// Devices found when the retraction was made.
    package var total: Int
    /// Devices whose push APNs accepted.
    package var sent: Int
    /// Devices whose token the push service said is dead, and devices
    /// skipped because their token was known dead (``skipped``).
    package var dead: Int
    /// Devices waiting for another attempt.
    package var retrying: Int
    /// Devices given up on.
    package var failed: Int
    /// Of ``dead``, the devices not sent to because their token was known
    /// dead and no delivery of the retraction's references was newer than
    /// its death. In a dry run, the devices the retraction would skip.
    package var skipped: Int
    /// Of the pending devices, those whose push could not reach the service
    /// at their last attempt: they wait for it to come back. Read from the
    /// queue, not a change a finished item applies.
    package var waiting: Int
    /// Devices a cancel left unsent: counted when the cancelled retraction's
    /// last page in flight finished.
    package var spared: Int

    package init(
        total: Int = 0, sent: Int = 0, dead: Int = 0, retrying: Int = 0, failed: Int = 0, skipped: Int = 0, waiting: Int = 0,
        spared: Int = 0
    ) {
        self.total = total
        self.sent = sent
        self.dead = dead
        self.retrying = retrying
        self.failed = failed
        self.skipped = skipped
        self.waiting = waiting
        self.spared = spared
    }

    /// Devices not yet settled: neither sent, dead, failed nor spared.
    package var pending: Int { max(total - sent - dead - failed - spared, 0) }

    /// Whether every device is settled: sent, dead, failed or spared. A
    /// `done` retraction whose deliveries were all kept meets it.
    package var isSettled: Bool { sent + dead + failed + spared == total }

    package static func + (lhs: RetractionCounts, rhs: RetractionCounts) -> RetractionCounts {
        RetractionCounts(
            total: lhs.total + rhs.total, sent: lhs.sent + rhs.sent, dead: lhs.dead + rhs.dead,
            retrying: lhs.retrying + rhs.retrying, failed: lhs.failed + rhs.failed, skipped: lhs.skipped + rhs.skipped,
            waiting: lhs.waiting + rhs.waiting, spared: lhs.spared + rhs.spared)
    }

    package static func += (lhs: inout RetractionCounts, rhs: RetractionCounts) { lhs = lhs + rhs }
}

/// What a retraction takes: references, or every delivery a selector takes.
package enum RetractionTarget: Hashable, Sendable {
    case references([ReferenceID])
    case selector(RetractionSelector)

    /// The target of a request that names `references` or a `selector`,
    /// checked here once for every way in (the API, the CLI, the console):
    /// 1 to ``RetractionRequest/maximumReferences`` references, or one
    /// selector whose label a delivery could carry and whose range is not
    /// empty, not both. A retraction read back from the ledger rebuilds its
    /// target from what was checked when it was made.
    package init(references: [ReferenceID], selector: RetractionSelector?, now: Date = Date()) throws(FieldProblem) {
        guard let selector else {
            guard !references.isEmpty else {
                throw FieldProblem("references", "at least one reference, or one selector: thread, sender, recipient or campaign")
            }
            guard references.count <= RetractionRequest.maximumReferences else {
                throw FieldProblem("references", "\(references.count) references; at most \(RetractionRequest.maximumReferences)")
            }
            self = .references(references)
            return
        }
        guard references.isEmpty else {
            throw FieldProblem("references", "name references or a selector (here \(selector.kind.rawValue)), not both")
        }
        if let (field, problem) = selector.problem(now: now) { throw FieldProblem(field, problem) }
        self = .selector(selector)
    }

    /// The references it names; none for a selector.
    package var references: [ReferenceID] {
        if case .references(let references) = self { references } else { [] }
    }

    /// The selector it takes instead of references, if it does.
    package var selector: RetractionSelector? {
        if case .selector(let selector) = self { selector } else { nil }
    }
}

extension Retraction {
    package var target: RetractionTarget { selector.map { .selector($0) } ?? .references(references) }

    /// The account it is of (``LedgerScope``); nil: the app's only account.
    package var account: String? {
        if let first = references.first { return LedgerScope.split(first).account }
        return selector.flatMap { LedgerScope.split($0.value).account }
    }

    /// Its references as the app names them, without the ledger's account scope.
    package var appReferences: [ReferenceID] { references.map { LedgerScope.split($0).reference } }
}

/// How many pushes went out: one per device sent to, more for a device
/// whose references need several bodies (or the legacy dialect's one per
/// reference); and the references of earlier retractions they carried.
package struct PushesSent: Hashable, Sendable {
    /// Pushes the services accepted.
    package var total: Int
    /// The most one device needed.
    package var mostToOneDevice: Int
    /// References of the device's recent earlier retractions its pushes
    /// carried besides this retraction's, summed over devices.
    package var historyCarried: Int
    /// Those recent references left out: no room for them in the body.
    package var historyLeftOut: Int

    package init(total: Int = 0, mostToOneDevice: Int = 0, historyCarried: Int = 0, historyLeftOut: Int = 0) {
        self.total = total
        self.mostToOneDevice = mostToOneDevice
        self.historyCarried = historyCarried
        self.historyLeftOut = historyLeftOut
    }

    /// Adds a device's pushes, or another tally's.
    package mutating func add(_ other: PushesSent) {
        total += other.total
        mostToOneDevice = max(mostToOneDevice, other.mostToOneDevice)
        historyCarried += other.historyCarried
        historyLeftOut += other.historyLeftOut
    }
}

/// What asking for a retraction takes.
package struct RetractionRequest: Hashable, Sendable {
    package var appID: Int64
    /// Its references, or the selector that says what to retract.
    package var target: RetractionTarget
    /// Who asked: an API key's name, a user at a terminal.
    package var requestedBy: String
    package var reason: String?
    /// Count the devices, send nothing.
    package var dryRun: Bool
    /// The same key with the same request returns the first retraction; with
    /// another request it is ``StoreError/Code/idempotencyConflict``.
    package var idempotencyKey: String?
    package var mode: RetractionMode
    package var badge: Int?
    /// What its alerts show instead of the app's retraction text.
    package var text: String?
    /// The API key that asks, if one does: it may not approve the retraction too.
    package var requestedKeyID: UUID?
    /// An edit instead of a removal: the new text of the target's one reference.
    package var edit: NotificationEdit?

    package init(
        appID: Int64, target: RetractionTarget, requestedBy: String, reason: String? = nil, dryRun: Bool = false,
        idempotencyKey: String? = nil, mode: RetractionMode = .background, badge: Int? = nil, text: String? = nil,
        requestedKeyID: UUID? = nil, edit: NotificationEdit? = nil
    ) {
        self.appID = appID
        self.target = target
        self.requestedBy = requestedBy
        self.reason = reason
        self.dryRun = dryRun
        self.idempotencyKey = idempotencyKey
        self.mode = mode
        self.badge = badge
        self.text = text
        self.requestedKeyID = requestedKeyID
        self.edit = edit
    }

    /// The references to retract; empty when ``selector`` says what to retract.
    package var references: [ReferenceID] { target.references }
    /// Every delivery with one label instead of references.
    package var selector: RetractionSelector? { target.selector }

    /// The most references one retraction may name.
    package static let maximumReferences = 1000
}
