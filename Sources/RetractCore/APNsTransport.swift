import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import RetractAPNs
import RetractKit
import RetractStore

/// How the engine talks to APNs, for every app alike.
public struct APNsSettings: Sendable {
    /// Extra root certificates (PEM) to trust: a private endpoint, the simulator.
    public var additionalTrustRootsPEM: [String]
    /// HTTP/2 connections per app; each carries up to APNs's stream limit.
    public var connectionsPerApp: Int
    public var requestTimeout: TimeAmount
    /// The backoff for retryable answers (429, 5xx, lost connections).
    public var retryPolicy: RetryPolicy
    /// A passphrase for PKCS#12 client certificates.
    public var certificatePassphrase: String?

    public init(
        additionalTrustRootsPEM: [String] = [],
        connectionsPerApp: Int = 2,
        requestTimeout: TimeAmount = .seconds(30),
        retryPolicy: RetryPolicy = RetryPolicy(baseDelay: .milliseconds(250), maximumDelay: .seconds(30)),
        certificatePassphrase: String? = nil
    ) {
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.connectionsPerApp = connectionsPerApp
        self.requestTimeout = requestTimeout
        self.retryPolicy = retryPolicy
        self.certificatePassphrase = certificatePassphrase
    }
}

/// Sends one app's pushes through an ``APNsClient``.
public final class APNsTransport: PushTransport {
    private let client: APNsClient
    private let topic: String
    private let policy: RetryPolicy

    public init(client: APNsClient, topic: String, policy: RetryPolicy) {
        self.client = client
        self.topic = topic
        self.policy = policy
    }

    public func send(_ push: OutgoingPush, attempt: Int) async -> PushOutcome {
        let request: APNsRequest
        switch push.kind {
        case .retraction:
            request = APNsRequest(deviceToken: push.token.hex, topic: topic, pushType: .background, body: push.body)
        case .original(let visible, let collapseID):
            request = APNsRequest(
                deviceToken: push.token.hex, topic: topic, pushType: visible ? .alert : .background, collapseID: collapseID,
                body: push.body)
        }
        let result: Result<APNsResponse, APNsError>
        do {
            result = .success(try await client.send(request))
        } catch {
            result = .failure(error)
        }
        var random = SystemRandomNumberGenerator()
        return Self.outcome(of: result, disposition: APNsDisposition(classifying: result, attempt: attempt, policy: policy, using: &random))
    }

    public func shutdown() async {
        await client.shutdown()
    }

    static func outcome(of result: Result<APNsResponse, APNsError>, disposition: APNsDisposition) -> PushOutcome {
        switch result {
        case .failure(.authenticationUnavailable(let problem)):
            // The key or certificate cannot be used, or APNs refused the certificate: no push of the app can go.
            return .authenticationFailed(reason: problem)
        case .failure(.connectFailed(let problem)):
            return .unreachable(reason: "cannot connect to APNs: \(problem)")
        default:
            break
        }
        let reason: String
        switch result {
        case .success: reason = ""
        case .failure(.rejected(let rejection)): reason = rejection.reason.rawValue
        case .failure(let error): reason = "\(error)"
        }
        switch disposition {
        case .delivered:
            return .accepted
        case .retry(let delay):
            return .retry(after: .nanoseconds(delay.nanoseconds), reason: reason)
        case .tokenDead(let since):
            return .tokenDead(since: since ?? Date(), reason: reason)
        case .refreshAuthenticationAndRetry:
            // APNsClient already made a new provider token once; expired again means the clock or the key is wrong.
            return .authenticationFailed(reason: "\(reason) even with a new provider token")
        case .authenticationFailed(let apnsReason):
            return .authenticationFailed(reason: apnsReason.rawValue)
        case .permanentFailure:
            return .failed(reason: reason)
        }
    }
}

/// Why a file cannot be read, in a few words.
func fileProblem(_ path: String) -> String {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "no such file" }
    if isDirectory.boolValue { return "it is a directory" }
    return FileManager.default.isReadableFile(atPath: path) ? "unreadable" : "permission denied"
}
