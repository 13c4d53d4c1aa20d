import Foundation
import RetractModel
import RetractStore

/// The body of a completion webhook: the retraction's final account, as
/// `GET /v1/retractions/{id}` gives it, with the event's name and the
/// delivery's id (the same on every attempt, for a receiver to drop repeats).
package struct WebhookEvent: Encodable, Sendable {
    /// The one event there is.
    package static let finished = "retraction.finished"

    package var event: String
    package var deliveryId: String
    package var retraction: RetractionView

    package init(deliveryID: UUID, retraction: RetractionView) {
        event = Self.finished
        deliveryId = deliveryID.uuidString.lowercased()
        self.retraction = retraction
        // The account of the delivery itself is not part of what it delivers.
        self.retraction.webhook = nil
    }
}

/// A retraction's completion webhook as `GET /v1/retractions/{id}` shows it.
package struct WebhookView: Encodable, Sendable, Hashable {
    package var url: String
    /// `pending`, `retrying`, `delivered` or `gave-up`.
    package var state: String
    package var attempts: Int
    package var lastStatus: Int?
    package var lastError: String?
    package var deliveredAt: Date?
    package var gaveUpAt: Date?
    package var nextAttemptAt: Date?

    package init(_ delivery: WebhookDelivery) {
        url = WebhookURL.redacted(delivery.url)
        state = delivery.state.rawValue
        attempts = delivery.attempts
        lastStatus = delivery.lastStatus
        lastError = delivery.lastError
        deliveredAt = delivery.deliveredAt
        gaveUpAt = delivery.gaveUpAt
        nextAttemptAt = delivery.nextAttemptAt
    }
}
