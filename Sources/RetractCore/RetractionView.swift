import Foundation
import RetractKit
import RetractModel

/// A retraction as `GET /v1/retractions/{id}` and `retract status --json`
/// show it: one view, one word for each count.
package struct RetractionView: Encodable, Sendable {
    package var id: String
    package var app: String
    /// The account it is of, when it names one: its references and label are that account's.
    package var account: String?
    /// The references it retracts; empty for a retraction by selector.
    package var references: [String]
    /// For a retraction by selector: its label, one of these four...
    package var thread: String?
    package var sender: String?
    package var recipient: String?
    package var campaign: String?
    /// ...and the range of send times it takes (`sentBefore` is always set).
    package var sentAfter: Date?
    package var sentBefore: Date?
    /// For a retraction by selector: the references it matched when made.
    package var referencesMatched: Int?
    /// For a dry run or a retraction by selector: the most references one device is sent.
    package var mostReferencesPerDevice: Int?
    package var reason: String?
    package var dryRun: Bool
    package var requestedBy: String
    /// The delivery mode: background, service-extension or replace.
    package var mode: String
    package var badge: Int?
    /// Its own alert text, when given instead of the app's.
    package var text: String?
    /// For an edit: the new title and body its pushes carry instead of a removal.
    package var edit: NotificationEdit?
    package var state: String
    package var failure: String?
    package var total: Int
    package var sent: Int
    package var failed: Int
    /// Devices the service answered as gone (their tokens are marked dead),
    /// and devices skipped because their token was known dead.
    package var unregistered: Int
    /// Of `unregistered`, devices skipped because their token was known dead.
    package var skipped: Int
    package var pending: Int
    /// Devices a cancel left unsent, once the pages in flight finished.
    package var spared: Int
    /// Who cancelled it, why and when, if it was.
    package var cancelled: CancellationView?
    /// Its approval, when its app wanted one: awaiting until when, or who decided, why and when.
    package var approval: ApprovalView?
    /// Of `pending`, devices waiting to be sent again after a retryable answer.
    package var retrying: Int
    /// Of `pending`, devices waiting for their push service to come back, and why.
    package var waiting: Int
    package var waitingReason: String?
    /// Pushes accepted by the services: one per device sent to, more for a
    /// device whose references need several.
    package var pushes: Int
    package var mostPushesToOneDevice: Int
    /// References of the devices' recent earlier retractions that rode along
    /// in its pushes, summed over devices, and those left out for want of room.
    package var historyCarried: Int
    package var historyLeftOut: Int
    package var failures: [String: Int]
    /// What the app's dialect costs this retraction, known before it is sent.
    package var warnings: [String]?
    package var hints: [String]?
    package var createdAt: Date
    package var startedAt: Date?
    package var finishedAt: Date?
    /// How long the CLI followed it, when it did.
    package var seconds: Double?
    /// Its completion webhook, when its app has one and it has ended.
    package var webhook: WebhookView?

    package init(_ status: RetractionStatus, app: String, seconds: Double? = nil) {
        let retraction = status.retraction
        id = retraction.id.uuidString.lowercased()
        self.app = app
        account = retraction.account
        references = retraction.appReferences.map(\.rawValue)
        if let selector = retraction.selector {
            let value = LedgerScope.value(selector.value)
            switch selector.kind {
            case .thread: thread = value
            case .sender: sender = value
            case .recipient: recipient = value
            case .campaign: campaign = value
            }
            sentAfter = selector.sentAfter
            sentBefore = selector.sentBefore
        }
        referencesMatched = retraction.referencesMatched
        mostReferencesPerDevice = retraction.mostReferences
        reason = retraction.reason
        dryRun = retraction.dryRun
        requestedBy = retraction.requestedBy
        mode = retraction.mode.rawValue
        badge = retraction.badge
        text = retraction.text
        edit = retraction.edit
        state = retraction.state.rawValue
        failure = retraction.failure
        total = retraction.counts.total
        sent = retraction.counts.sent
        failed = retraction.counts.failed
        unregistered = retraction.counts.dead
        skipped = retraction.counts.skipped
        pending = retraction.counts.pending
        spared = retraction.counts.spared
        cancelled = retraction.cancellation.map { CancellationView(by: $0.by, reason: $0.reason, at: $0.at) }
        approval = retraction.approval.map {
            ApprovalView(state: $0.state.rawValue, expiresAt: $0.expiresAt, by: $0.decidedBy, reason: $0.reason, at: $0.decidedAt)
        }
        retrying = retraction.counts.retrying
        waiting = retraction.counts.waiting
        waitingReason = retraction.waitingReason
        pushes = retraction.pushes.total
        mostPushesToOneDevice = retraction.pushes.mostToOneDevice
        historyCarried = retraction.pushes.historyCarried
        historyLeftOut = retraction.pushes.historyLeftOut
        failures = status.failures
        warnings = status.warnings.isEmpty ? nil : status.warnings
        hints = status.hints.isEmpty ? nil : status.hints
        createdAt = retraction.createdAt
        startedAt = retraction.startedAt
        finishedAt = retraction.finishedAt
        self.seconds = seconds
        webhook = status.webhook.map(WebhookView.init)
    }
}

/// A retraction's approval: `awaiting` (until `expiresAt`), `approved`,
/// `rejected` (by whom, why, when) or `expired`.
package struct ApprovalView: Encodable, Sendable {
    package var state: String
    package var expiresAt: Date?
    package var by: String?
    package var reason: String?
    package var at: Date?
}

/// Who cancelled a retraction, why and when.
package struct CancellationView: Encodable, Sendable {
    package var by: String
    package var reason: String
    package var at: Date
}
