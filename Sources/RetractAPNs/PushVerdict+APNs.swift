import Foundation
import RetractPush

extension PushVerdict {
    /// What APNs's refusal of a push (or the client's failure to get an
    /// answer) means; an accepted push is ``delivered``.
    ///
    /// `BadDeviceToken` and `DeviceTokenNotForTopic` are failures of the
    /// device, not dead tokens: they mostly mean the app's environment or
    /// topic is wrong. `ExpiredProviderToken` is a refusal of the
    /// credentials: ``APNsClient/send(_:)`` has already made a new provider
    /// token once and been refused again, so the clock or the key is wrong.
    public init(_ error: APNsError) {
        switch error {
        case .rejected(let rejection):
            let reason = rejection.reason.rawValue
            switch rejection.reason {
            case .expiredToken, .unregistered:
                self = .tokenDead(since: rejection.timestamp, reason: reason)
            case .expiredProviderToken:
                self = .credentialsRefused(reason: "\(reason) even with a new provider token")
            case .badCertificate, .badCertificateEnvironment, .forbidden, .invalidProviderToken, .missingProviderToken,
                .unrelatedKeyIdInToken, .badEnvironmentKeyInToken:
                self = .credentialsRefused(reason: reason)
            case .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown, .idleTimeout:
                self = .retryable(reason: reason, retryAfter: nil)
            case .unknown where rejection.status == 429 || rejection.status >= 500:
                self = .retryable(reason: reason, retryAfter: nil)
            default:
                self = .failed(reason: reason)
            }
        case .authenticationUnavailable(let problem):
            // The key or certificate cannot be used, or APNs refused the certificate.
            self = .credentialsRefused(reason: problem)
        case .connectFailed(let problem):
            self = .unreachable(reason: "cannot connect to APNs: \(problem)")
        case .timedOut, .connectionLost:
            self = .retryable(reason: "\(error)", retryAfter: nil)
        case .invalidRequest, .clientShutdown:
            self = .failed(reason: "\(error)")
        }
    }
}
