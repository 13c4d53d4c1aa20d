import Foundation

/// A retraction as `GET /v1/retractions/{id}` and `retract status --json`
/// show it: one view, one word for each count.
package struct RetractionView: Encodable, Sendable {
    package var id: String
    package var app: String
    package var references: [String]
    package var reason: String?
    package var dryRun: Bool
    package var requestedBy: String
    /// The delivery mode: background, service-extension or replace.
    package var mode: String
    package var badge: Int?
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
    /// Of `pending`, devices waiting to be sent again after a retryable answer.
    package var retrying: Int
    /// Of `pending`, devices waiting for their push service to come back, and why.
    package var waiting: Int
    package var waitingReason: String?
    package var failures: [String: Int]
    package var hints: [String]?
    package var createdAt: Date
    package var startedAt: Date?
    package var finishedAt: Date?
    /// How long the CLI followed it, when it did.
    package var seconds: Double?

    package init(_ status: RetractionStatus, app: String, seconds: Double? = nil) {
        let retraction = status.retraction
        id = retraction.id.uuidString.lowercased()
        self.app = app
        references = retraction.references.map(\.rawValue)
        reason = retraction.reason
        dryRun = retraction.dryRun
        requestedBy = retraction.requestedBy
        mode = retraction.mode.rawValue
        badge = retraction.badge
        state = retraction.state.rawValue
        failure = retraction.failure
        total = retraction.counts.total
        sent = retraction.counts.sent
        failed = retraction.counts.failed
        unregistered = retraction.counts.dead
        skipped = retraction.counts.skipped
        pending = retraction.counts.pending
        retrying = retraction.counts.retrying
        waiting = retraction.counts.waiting
        waitingReason = retraction.waitingReason
        failures = status.failures
        hints = status.hints.isEmpty ? nil : status.hints
        createdAt = retraction.createdAt
        startedAt = retraction.startedAt
        finishedAt = retraction.finishedAt
        self.seconds = seconds
    }
}
