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

/// Why a push was not accepted.
public enum APNsError: Error, Hashable, Sendable {
    /// APNs answered with an error status.
    case rejected(APNsRejection)
    /// Refused before the network; APNs never saw it.
    case invalidRequest(APNsRequestError)
    /// No answer within the request's timeout. APNs may or may not have
    /// accepted it; the connection was replaced.
    case timedOut
    /// The connection closed while the push was in flight. APNs may or may not
    /// have accepted it.
    case connectionLost
    /// No connection to APNs could be made.
    case connectFailed(String)
    /// The client cannot authenticate: the signing key or certificate is unusable.
    case authenticationUnavailable(String)
    /// The client was shut down.
    case clientShutdown
}

extension APNsError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .rejected(let rejection):
            "APNs answered \(rejection.status) \(rejection.reason)"
                + (rejection.timestamp.map { " (token invalid since \($0))" } ?? "")
        case .invalidRequest(let error): "invalid request: \(error)"
        case .timedOut: "no answer from APNs within the timeout"
        case .connectionLost: "the connection to APNs closed while the push was in flight"
        case .connectFailed(let reason): "cannot connect to APNs: \(reason)"
        case .authenticationUnavailable(let reason): "cannot authenticate to APNs: \(reason)"
        case .clientShutdown: "the APNs client was shut down"
        }
    }
}
