import Foundation

/// What a push service's answer to one push means, in the terms every
/// service shares. Each client (RetractAPNs, RetractFCM) classifies its own
/// answers into one of these; what to do next (when to try again, how long
/// to go on) is decided once, by the sender, for every service alike.
public enum PushVerdict: Sendable, Hashable {
    /// The service took the push.
    case delivered
    /// The token will never work again. `since` is the service's time when it gave one.
    case tokenDead(since: Date?, reason: String)
    /// This device's push failed, and sending it again will not help.
    case failed(reason: String)
    /// The app's credentials are refused: no push of the app can succeed.
    case credentialsRefused(reason: String)
    /// Worth trying again; the push may have reached the service. When the
    /// service asked for a wait (`Retry-After`), `retryAfter` is it, in seconds.
    case retryable(reason: String, retryAfter: TimeInterval?)
    /// The push never reached the service: it cannot be connected to (a
    /// refused connection, a failed TLS handshake, a connection backing off).
    case unreachable(reason: String)

    /// Why the push did not go, or nil when it did.
    public var reason: String? {
        switch self {
        case .delivered: nil
        case .tokenDead(_, let reason), .failed(let reason), .credentialsRefused(let reason), .retryable(let reason, _),
            .unreachable(let reason):
            reason
        }
    }
}
