import APNsSimulator
import Crypto
import Foundation
import Metrics
import NIOCore
import RetractAPNs

/// A simulator and clients that trust it, with one provider-token key.
struct Harness {
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let topic = "com.example.chat"

    let signingKey = P256.Signing.PrivateKey()

    var tokenKey: APNsSimulatorTokenKey {
        APNsSimulatorTokenKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: signingKey.publicKey)
    }

    func startSimulator(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(),
        topics: Set<String>? = [Harness.topic],
        inboxPort: Int? = nil,
        clientCertificateRootsPEM: [String] = [],
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> APNsSimulator {
        try await APNsSimulator.start(
            APNsSimulatorConfiguration(
                inboxPort: inboxPort,
                tokenKeys: [tokenKey],
                clientCertificateRootsPEM: clientCertificateRootsPEM,
                topics: topics,
                faults: faults,
                now: now
            )
        )
    }

    func client(
        for simulator: APNsSimulator,
        authentication: APNsAuthentication? = nil,
        connectionCount: Int = 1,
        // Tests run in parallel on a debug build: only a timeout test wants a short one.
        requestTimeout: TimeAmount = .seconds(60),
        now: @escaping @Sendable () -> Date = { Date() },
        metrics: any MetricsFactory = MetricsSystem.factory
    ) throws -> APNsClient {
        try APNsClient(
            configuration: APNsClientConfiguration(
                environment: .custom(host: "127.0.0.1", port: simulator.port),
                authentication: authentication
                    ?? .token(key: APNsSigningKey(signingKey), keyID: Self.keyID, teamID: Self.teamID),
                additionalTrustRootsPEM: [simulator.certificateAuthorityPEM!],
                connectionCount: connectionCount,
                requestTimeout: requestTimeout,
                now: now
            ),
            metricsFactory: metrics
        )
    }

    /// A retraction push to `token`, as Retract sends it.
    static func retraction(to token: String, reference: String = "msg-1") -> APNsRequest {
        APNsRequest(
            deviceToken: token,
            topic: topic,
            pushType: .background,
            body: Array(
                #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)","isReferredNotificationMustRemoved":true}}"#
                    .utf8
            )
        )
    }

    /// A 32-byte device token, distinct for each number.
    static func deviceToken(_ number: Int) -> String {
        String(format: "%064x", number)
    }
}

/// Stops what a test started, whatever happened in it.
@discardableResult
func withSimulatorAndClient<Result>(
    _ simulator: APNsSimulator,
    _ client: APNsClient,
    _ body: () async throws -> Result
) async throws -> Result {
    do {
        let result = try await body()
        await client.shutdown()
        try await simulator.stop()
        return result
    } catch {
        await client.shutdown()
        try? await simulator.stop()
        throw error
    }
}

/// Whether `condition` holds within `timeout` (long: the whole suite shares two
/// cores), checking every 10 ms: for
/// counters another event loop updates.
func eventually(within timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
