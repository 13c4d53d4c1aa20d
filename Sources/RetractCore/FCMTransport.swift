import Foundation
import NIOConcurrencyHelpers
import NIOCore
import RetractAPNs
import RetractFCM
import RetractKit
import RetractStore

/// How the engine talks to FCM, for every app alike.
public struct FCMSettings: Sendable {
    /// The base of `/v1/projects/<project>/messages:send` (Google's unless a proxy or the simulator).
    public var messagesBaseURL: String
    /// Extra root certificates (PEM) to trust: a proxy, the simulator.
    public var additionalTrustRootsPEM: [String]
    public var requestTimeout: TimeAmount
    /// The backoff for retryable answers; a `Retry-After` is waited out in full.
    public var retryPolicy: RetryPolicy

    public init(
        messagesBaseURL: String = FCMClientConfiguration.defaultMessagesBaseURL,
        additionalTrustRootsPEM: [String] = [],
        requestTimeout: TimeAmount = .seconds(30),
        retryPolicy: RetryPolicy = RetryPolicy(baseDelay: .milliseconds(250), maximumDelay: .seconds(30))
    ) {
        self.messagesBaseURL = messagesBaseURL
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.requestTimeout = requestTimeout
        self.retryPolicy = retryPolicy
    }

    public var clientConfiguration: FCMClientConfiguration {
        FCMClientConfiguration(
            messagesBaseURL: messagesBaseURL, additionalTrustRootsPEM: additionalTrustRootsPEM, requestTimeout: requestTimeout)
    }
}

/// Sends one app's pushes through an ``FCMClient``: each push's APNs-style
/// body becomes an FCM message (see ``FCMMessage``), built once per body.
public final class FCMTransport: PushTransport {
    private let client: FCMClient
    private let policy: RetryPolicy
    /// Messages by body and kind: a broadcast's pushes share a handful of bodies.
    private let messages = NIOLockedValueBox<[MessageKey: FCMMessage]>([:])

    private struct MessageKey: Hashable {
        var body: ByteBuffer
        var kind: OutgoingPush.Kind
    }

    public init(client: FCMClient, policy: RetryPolicy) {
        self.client = client
        self.policy = policy
    }

    public func send(_ push: OutgoingPush, attempt: Int) async -> PushOutcome {
        let message: FCMMessage
        do {
            message = try self.message(for: push)
        } catch {
            return .failed(reason: "FCM message: \(error.message)")
        }
        let result: Result<String, FCMError>
        do {
            result = .success(try await client.send(message.request(token: PushService.fcm.text(of: push.token))))
        } catch {
            result = .failure(error)
        }
        var random = SystemRandomNumberGenerator()
        return Self.outcome(of: result, attempt: attempt, policy: policy, using: &random)
    }

    public func shutdown() async {
        await client.shutdown()
    }

    private func message(for push: OutgoingPush) throws(FCMMessageError) -> FCMMessage {
        let key = MessageKey(body: push.body, kind: push.kind)
        if let known = messages.withLockedValue({ $0[key] }) { return known }
        let made: FCMMessage
        switch push.kind {
        case .retraction: made = try FCMMessage(body: push.body.readableBytesView, kind: .background)
        case .original(let visible, let collapseID):
            made = try FCMMessage(body: push.body.readableBytesView, kind: visible ? .alert : .background, collapseID: collapseID)
        }
        messages.withLockedValue { messages in
            if messages.count >= 1024 { messages.removeAll() }
            messages[key] = made
        }
        return made
    }

    /// What the engine does with FCM's answer to attempt `attempt` (1 for the first).
    static func outcome(
        of result: Result<String, FCMError>, attempt: Int, policy: RetryPolicy, using generator: inout some RandomNumberGenerator
    ) -> PushOutcome {
        let error: FCMError
        switch result {
        case .success: return .accepted
        case .failure(let failure): error = failure
        }
        let reason = "\(error)"
        let retryAfter: TimeInterval?
        switch error {
        case .rejected(let rejection):
            switch rejection.disposition {
            case .tokenDead: return .tokenDead(since: Date(), reason: reason)
            // FCMClient has already fetched a new access token once; refused again, the account is the problem.
            case .authenticationFailed, .refreshAccessToken: return .authenticationFailed(reason: reason)
            case .permanent: return .failed(reason: reason)
            case .retry: retryAfter = rejection.retryAfter
            }
        case .accessTokenRefused(let status?, _) where (400..<500).contains(status) && status != 429:
            // invalid_grant and the like: the service account or its key is refused.
            return .authenticationFailed(reason: reason)
        case .unreachable:
            return .unreachable(reason: reason)
        case .accessTokenRefused, .connection:
            retryAfter = nil
        case .invalidMessage, .clientShutdown:
            return .failed(reason: reason)
        }
        // FCM asks senders to wait at least Retry-After (FCMRejection caps it
        // at an hour), and to back off exponentially without one.
        let backoff = Duration.nanoseconds(policy.delay(afterAttempt: attempt, using: &generator).nanoseconds)
        return .retry(after: max(backoff, .seconds(retryAfter ?? 0)), reason: reason)
    }
}
