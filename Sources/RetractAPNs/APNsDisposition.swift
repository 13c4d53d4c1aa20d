import Foundation
import NIOCore

/// What the sender of a push should do with its outcome.
public enum APNsDisposition: Hashable, Sendable {
    /// Accepted by APNs.
    case delivered
    /// Send it again after this delay.
    case retry(after: TimeAmount)
    /// The token is no longer valid (410): do not send to it again until the
    /// app registers it anew. The time is APNs's, when it gave one.
    case tokenDead(since: Date?)
    /// The provider token expired: make a new one and send again.
    /// `APNsClient.send` has already done this once before it reports the error.
    case refreshAuthenticationAndRetry
    /// The app's credentials are refused: stop sending for it and report.
    case authenticationFailed(APNsReason)
    /// Sending again will not help: report it. `BadDeviceToken` and
    /// `DeviceTokenNotForTopic` are such failures, not dead tokens: they
    /// mostly mean the app's environment or topic is wrong, not the device.
    case permanentFailure(APNsError)

    /// Classifies the outcome of attempt `attempt` (1 for the first): the
    /// attempt sets the backoff; how long to go on is the sender's budget.
    public init(
        classifying outcome: Result<APNsResponse, APNsError>,
        attempt: Int,
        policy: RetryPolicy,
        using generator: inout some RandomNumberGenerator
    ) {
        let error: APNsError
        switch outcome {
        case .success:
            self = .delivered
            return
        case .failure(let failure):
            error = failure
        }
        let retryable: Bool
        switch error {
        case .rejected(let rejection):
            switch rejection.reason {
            case .expiredToken, .unregistered:
                self = .tokenDead(since: rejection.timestamp)
                return
            case .expiredProviderToken:
                self = .refreshAuthenticationAndRetry
                return
            case .badCertificate, .badCertificateEnvironment, .forbidden, .invalidProviderToken, .missingProviderToken,
                .unrelatedKeyIdInToken, .badEnvironmentKeyInToken:
                self = .authenticationFailed(rejection.reason)
                return
            case .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
                .idleTimeout:
                retryable = true
            case .unknown:
                retryable = rejection.status == 429 || rejection.status >= 500
            default:
                retryable = false
            }
        case .timedOut, .connectionLost, .connectFailed:
            retryable = true
        case .invalidRequest, .authenticationUnavailable, .clientShutdown:
            retryable = false
        }
        guard retryable else {
            self = .permanentFailure(error)
            return
        }
        self = .retry(after: policy.delay(afterAttempt: attempt, using: &generator))
    }
}
