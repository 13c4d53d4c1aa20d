import Foundation
import RetractHTTP2

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

extension APNsError {
    /// A request the connection pool could not get answered.
    init(_ transport: HTTP2TransportError) {
        switch transport {
        case .timedOut: self = .timedOut
        case .connectionLost: self = .connectionLost
        case .connectFailed(let reason): self = .connectFailed(reason)
        case .clientCertificateRefused(let alert): self = .authenticationUnavailable("APNs refused the client certificate (\(alert))")
        case .clientShutdown: self = .clientShutdown
        }
    }
}
