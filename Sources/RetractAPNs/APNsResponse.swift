import Foundation

/// APNs accepted the push.
public struct APNsResponse: Hashable, Sendable {
    /// The `apns-id` APNs answered with: the request's, or one it made up.
    public var apnsID: UUID?
    /// `apns-unique-id`, sent by the sandbox only, for looking a push up in Apple's delivery log.
    public var uniqueID: UUID?

    public init(apnsID: UUID?, uniqueID: UUID? = nil) {
        self.apnsID = apnsID
        self.uniqueID = uniqueID
    }
}

/// APNs answered a push with an error status.
public struct APNsRejection: Hashable, Sendable {
    public var status: Int
    public var reason: APNsReason
    /// For 410: since when the token is no longer valid for the topic.
    public var timestamp: Date?
    public var apnsID: UUID?

    public init(status: Int, reason: APNsReason, timestamp: Date? = nil, apnsID: UUID? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
    }
}
