import Foundation
import RetractKit

/// A token the push service said is no longer valid for an app.
package struct DeadToken: Hashable, Sendable {
    package var token: DeviceToken
    /// When the service says the token stopped being valid (APNs's 410
    /// timestamp), else when it answered.
    package var since: Date
    /// The service's reason, such as `Unregistered`.
    package var reason: String
    /// When the service answered. Deliveries recorded before it are skipped
    /// by retractions; a delivery recorded after it (the app registered the
    /// token again and was sent something newer) brings the token back.
    package var learnedAt: Date

    package init(token: DeviceToken, since: Date, reason: String, learnedAt: Date = Date()) {
        self.token = token
        self.since = since
        self.reason = reason
        self.learnedAt = learnedAt
    }
}
