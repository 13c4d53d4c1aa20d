import Foundation
import RetractPush

extension PushVerdict {
    /// Why FCM did not take a message, or the client could not ask it; a
    /// message FCM took is ``delivered``.
    ///
    /// ``FCMClient`` has already fetched a new access token once when FCM
    /// refused the one it had; refused again, the service account is the
    /// problem. A refused token request with a 4xx other than 429
    /// (`invalid_grant` and the like) is a refused account too.
    public init(_ error: FCMError) {
        let reason = "\(error)"
        switch error {
        case .rejected(let rejection):
            switch rejection.disposition {
            case .tokenDead: self = .tokenDead(since: nil, reason: reason)
            case .authenticationFailed, .refreshAccessToken: self = .credentialsRefused(reason: reason)
            case .permanent: self = .failed(reason: reason)
            case .retry: self = .retryable(reason: reason, retryAfter: rejection.retryAfter)
            }
        case .accessTokenRefused(let status?, _) where (400..<500).contains(status) && status != 429:
            self = .credentialsRefused(reason: reason)
        case .unreachable:
            self = .unreachable(reason: reason)
        case .accessTokenRefused, .connection:
            self = .retryable(reason: reason, retryAfter: nil)
        case .invalidMessage, .clientShutdown:
            self = .failed(reason: reason)
        }
    }
}
