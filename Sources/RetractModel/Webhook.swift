import Foundation

/// Where an app's completion webhooks go, and the secret that signs them.
package struct AppWebhook: Hashable, Sendable {
    package var appID: Int64
    /// An `https://` URL on a host the server allows.
    package var url: String
    /// Kept as given: it signs every delivery (docs/security.md).
    package var secret: String
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        appID: Int64, url: String, secret: String, createdAt: Date, updatedAt: Date
    ) {
        self.appID = appID
        self.url = url
        self.secret = secret
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One retraction's completion webhook and what became of it: shown by
/// `GET /v1/retractions/{id}` (and any console) as it is here.
package struct WebhookDelivery: Hashable, Sendable {
    package enum State: String, Hashable, Sendable {
        /// Not tried yet, or its first attempt is under way.
        case pending
        /// An attempt failed; another is due at ``WebhookDelivery/nextAttemptAt``.
        case retrying
        /// The receiver answered 2xx.
        case delivered
        /// Retried for the whole retry window without a 2xx; no more attempts.
        case gaveUp = "gave-up"
    }

    package var id: UUID
    package var retractionID: UUID
    package var appID: Int64
    package var url: String
    package var attempts: Int
    /// The HTTP status of the last attempt, when the receiver answered.
    package var lastStatus: Int?
    /// Why the last attempt failed, when it did.
    package var lastError: String?
    package var createdAt: Date
    package var firstAttemptAt: Date?
    package var deliveredAt: Date?
    package var gaveUpAt: Date?
    /// When the next attempt is due; nil once it is delivered or given up,
    /// and while an attempt is under way.
    package var nextAttemptAt: Date?

    package init(
        id: UUID, retractionID: UUID, appID: Int64, url: String, attempts: Int, lastStatus: Int?, lastError: String?, createdAt: Date,
        firstAttemptAt: Date?, deliveredAt: Date?, gaveUpAt: Date?, nextAttemptAt: Date?
    ) {
        self.id = id
        self.retractionID = retractionID
        self.appID = appID
        self.url = url
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.createdAt = createdAt
        self.firstAttemptAt = firstAttemptAt
        self.deliveredAt = deliveredAt
        self.gaveUpAt = gaveUpAt
        self.nextAttemptAt = nextAttemptAt
    }

    package var state: State {
        if deliveredAt != nil { return .delivered }
        if gaveUpAt != nil { return .gaveUp }
        return lastStatus == nil && lastError == nil ? .pending : .retrying
    }
}

/// A delivery claimed by a worker, with what it needs to send it.
package struct ClaimedWebhookDelivery: Hashable, Sendable {
    package var id: UUID
    package var retractionID: UUID
    package var appID: Int64
    /// This attempt's number, from 1.
    package var attempts: Int
    package var firstAttemptAt: Date
    package var claim: UUID
    /// The app's webhook now; nil when it was removed since the retraction ended.
    package var webhook: (url: String, secret: String)?

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id && lhs.claim == rhs.claim }
    package func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(claim)
    }

    package init(
        id: UUID, retractionID: UUID, appID: Int64, attempts: Int, firstAttemptAt: Date, claim: UUID,
        webhook: (url: String, secret: String)? = nil
    ) {
        self.id = id
        self.retractionID = retractionID
        self.appID = appID
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.claim = claim
        self.webhook = webhook
    }
}

/// How one attempt to deliver a webhook ended, as the ledger records it.
package enum WebhookOutcome: Hashable, Sendable {
    /// The receiver answered 2xx.
    case delivered(url: String, status: Int)
    /// Another attempt is due after `delay`.
    case retry(url: String?, status: Int?, error: String, delay: Duration)
    /// No more attempts.
    case gaveUp(url: String?, status: Int?, error: String)
}
