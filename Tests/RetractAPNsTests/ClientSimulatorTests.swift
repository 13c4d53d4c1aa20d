import APNsSimulator
import Foundation
import MetricsTestKit
import NIOCore
import RetractAPNs
import RetractPush
import SimulatorSupport
import Testing

@Suite("APNsClient against the simulator")
struct ClientSimulatorTests {
    let harness = Harness()

    @Test func backgroundPushIsAcceptedAndLandsInTheInbox() async throws {
        let simulator = try await harness.startSimulator()
        let client = try harness.client(for: simulator)
        try await withSimulatorAndClient(simulator, client) {
            let token = Harness.deviceToken(1)
            let apnsID = UUID()
            var request = Harness.retraction(to: token)
            request.apnsID = apnsID
            request.collapseID = "msg-1"
            let response = try await client.send(request)
            #expect(response.apnsID == apnsID)
            let inbox = simulator.inbox(for: token)
            #expect(inbox.count == 1)
            #expect(inbox.first?.headers["apns-push-type"] == "background")
            #expect(inbox.first?.headers["apns-priority"] == "5")
            #expect(inbox.first?.headers["apns-topic"] == Harness.topic)
            #expect(inbox.first?.headers["apns-collapse-id"] == "msg-1")
            #expect(inbox.first?.headers["authorization"] == nil)
            #expect(inbox.first?.body == Data(request.body.readableBytesView))
        }
    }
}

extension ClientSimulatorTests {
    /// A scripted answer, the typed error the client must report, and how it classifies.
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var faults: APNsSimulatorFaults = APNsSimulatorFaults()
        var topic = Harness.topic
        var status: Int
        var reason: APNsReason
        var timestamp: Date?
        var verdict: PushVerdict

        var testDescription: String { name }
    }

    static let deadSince = Date(timeIntervalSince1970: 1_760_000_000)
    static let scenarios: [Scenario] = [
        Scenario(
            name: "410 Unregistered",
            faults: APNsSimulatorFaults(unregisteredTokens: [Harness.deviceToken(7): deadSince]),
            status: 410, reason: .unregistered, timestamp: deadSince, verdict: .tokenDead(since: deadSince, reason: "Unregistered")
        ),
        Scenario(
            name: "400 BadDeviceToken",
            faults: APNsSimulatorFaults(badDeviceTokens: [Harness.deviceToken(7)]),
            status: 400, reason: .badDeviceToken, verdict: .failed(reason: "BadDeviceToken")
        ),
        Scenario(
            name: "429 TooManyRequests",
            faults: APNsSimulatorFaults(tooManyRequestsRate: 1),
            status: 429, reason: .tooManyRequests, verdict: .retryable(reason: "TooManyRequests", retryAfter: nil)
        ),
        Scenario(
            name: "503 ServiceUnavailable",
            faults: APNsSimulatorFaults(serviceUnavailableRate: 1),
            status: 503, reason: .serviceUnavailable, verdict: .retryable(reason: "ServiceUnavailable", retryAfter: nil)
        ),
        Scenario(
            name: "400 TopicDisallowed",
            topic: "com.example.other",
            status: 400, reason: .topicDisallowed, verdict: .failed(reason: "TopicDisallowed")
        ),
    ]

    @Test(arguments: scenarios)
    func simulatedErrorsArriveTypedAndClassified(scenario: Scenario) async throws {
        let simulator = try await harness.startSimulator(faults: scenario.faults)
        let client = try harness.client(for: simulator)
        try await withSimulatorAndClient(simulator, client) {
            var request = Harness.retraction(to: Harness.deviceToken(7))
            request.topic = scenario.topic
            let error = await #expect(throws: APNsError.self) { try await client.send(request) }
            guard case .rejected(let rejection)? = error else {
                Issue.record("expected a rejection, got \(String(describing: error))")
                return
            }
            #expect(rejection.status == scenario.status)
            #expect(rejection.reason == scenario.reason)
            #expect(rejection.timestamp == scenario.timestamp)
            #expect(rejection.apnsID != nil)
            #expect(PushVerdict(.rejected(rejection)) == scenario.verdict)
        }
    }

    @Test func tokenSignedWithAnUnknownKeyIsRefused() async throws {
        let simulator = try await harness.startSimulator()
        let stranger = Harness()
        let client = try harness.client(
            for: simulator,
            authentication: .token(key: APNsSigningKey(stranger.signingKey), keyID: Harness.keyID, teamID: Harness.teamID)
        )
        try await withSimulatorAndClient(simulator, client) {
            let error = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(1))) }
            guard case .rejected(let rejection)? = error else {
                Issue.record("\(String(describing: error))")
                return
            }
            #expect(rejection.reason == .invalidProviderToken)
            #expect(PushVerdict(.rejected(rejection)) == .credentialsRefused(reason: "InvalidProviderToken"))
        }
    }

    @Test func oneProviderTokenServesTenThousandConcurrentSends() async throws {
        let simulator = try await harness.startSimulator()
        // Ten thousand sends queue up at once in a debug build: give them time.
        let client = try harness.client(for: simulator, connectionCount: 2, requestTimeout: .seconds(120))
        try await withSimulatorAndClient(simulator, client) {
            let accepted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for number in 0..<10_000 {
                    group.addTask {
                        _ = try await client.send(Harness.retraction(to: Harness.deviceToken(number)))
                        return true
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(accepted == 10_000)
            #expect(simulator.statistics.accepted == 10_000)
            #expect(simulator.statistics.providerTokens == 1)
            #expect(client.providerTokensMade == 1)
            #expect(simulator.inboxes.count == 10_000)
        }
    }

    @Test func expiredProviderTokenIsReplacedOnceAndTheSendSucceeds() async throws {
        // The client's clock runs an hour behind when it signs its first token,
        // then is corrected: APNs says the token expired, the client makes a
        // new one and sends again.
        let clock = CorrectedClock(skew: -61 * 60)
        let simulator = try await harness.startSimulator()
        let client = try harness.client(for: simulator, now: { clock.now })
        try await withSimulatorAndClient(simulator, client) {
            _ = try await client.send(Harness.retraction(to: Harness.deviceToken(1)))
            #expect(client.providerTokensMade == 2)
            #expect(simulator.statistics.rejectedByReason["ExpiredProviderToken"] == 1)
            #expect(simulator.statistics.providerTokens == 1)
            #expect(simulator.inbox(for: Harness.deviceToken(1)).count == 1)
        }
    }

    @Test func expiredProviderTokenTwiceInARowIsReported() async throws {
        // A clock that stays an hour behind: the replacement expires too, and
        // the client does not replace it again within 20 minutes.
        let clock = MovingClock(Date().addingTimeInterval(-61 * 60))
        let simulator = try await harness.startSimulator()
        let client = try harness.client(for: simulator, now: { clock.now })
        try await withSimulatorAndClient(simulator, client) {
            let error = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(1))) }
            guard case .rejected(let rejection)? = error else {
                Issue.record("\(String(describing: error))")
                return
            }
            #expect(rejection.reason == .expiredProviderToken)
            #expect(client.providerTokensMade == 2)
            #expect(simulator.statistics.rejectedByReason["ExpiredProviderToken"] == 2)
        }
    }

    @Test func goAwayMidBurstLosesAndDuplicatesNothing() async throws {
        let simulator = try await harness.startSimulator(faults: APNsSimulatorFaults(goAwayAfterStreams: 700))
        let client = try harness.client(for: simulator, requestTimeout: .seconds(120))
        try await withSimulatorAndClient(simulator, client) {
            let count = 5_000
            let answered = try await withThrowingTaskGroup(of: Int.self) { group in
                for number in 0..<count {
                    group.addTask {
                        _ = try await client.send(Harness.retraction(to: Harness.deviceToken(number)))
                        return number
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(answered.count == count)
            #expect(Set(answered).count == count)
            #expect(simulator.statistics.goAwaysSent >= 7)
            #expect(client.connectionsOpened >= 8)
            #expect(simulator.statistics.accepted == count)
            let inboxes = simulator.inboxes
            #expect(inboxes.count == count)
            #expect(inboxes.values.allSatisfy { $0.count == 1 })
        }
    }

    @Test func invalidRequestsNeverReachTheNetwork() async throws {
        let simulator = try await harness.startSimulator()
        let client = try harness.client(for: simulator)
        try await withSimulatorAndClient(simulator, client) {
            var oversized = Harness.retraction(to: Harness.deviceToken(1))
            oversized.body = ByteBuffer(string: #"{"aps":{"content-available":1},"x":""# + String(repeating: "x", count: 5000) + "\"}")
            var noisy = Harness.retraction(to: Harness.deviceToken(1))
            noisy.body = ByteBuffer(string: #"{"aps":{"content-available":1,"sound":"ping"}}"#)
            var badToken = Harness.retraction(to: "not-hex")
            badToken.topic = Harness.topic
            for request in [oversized, noisy, badToken] {
                let error = await #expect(throws: APNsError.self) { try await client.send(request) }
                guard case .invalidRequest? = error else {
                    Issue.record("\(String(describing: error))")
                    return
                }
            }
            #expect(simulator.statistics.accepted + simulator.statistics.rejected == 0)
            #expect(simulator.statistics.connections == 0)
        }
    }

    @Test(arguments: [
        APNsSimulatorFaults(unresponsive: true),
        APNsSimulatorFaults(initialWindowSize: 0),
    ])
    func peerThatStopsAnsweringTimesOutAndTheConnectionIsReplaced(faults: APNsSimulatorFaults) async throws {
        let simulator = try await harness.startSimulator(faults: faults)
        let client = try harness.client(for: simulator, requestTimeout: .milliseconds(400))
        try await withSimulatorAndClient(simulator, client) {
            let started = ContinuousClock.now
            let error = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(1))) }
            #expect(error == .timedOut)
            // Far below the harness's 60-second default: the 400 ms timeout fired,
            // give or take an event loop shared with the whole suite on two cores.
            #expect(ContinuousClock.now - started < .seconds(10))
            guard case .retryable = PushVerdict(.timedOut) else {
                Issue.record("a timeout must be retryable")
                return
            }
            var second = Harness.retraction(to: Harness.deviceToken(2))
            second.timeout = .milliseconds(200)
            await #expect(throws: APNsError.timedOut) { try await client.send(second) }
            #expect(client.connectionsOpened == 2)
            // The simulator shares event loops with tests running alongside: it may see the accept a little later.
            #expect(await eventually { simulator.statistics.connections == 2 })
        }
    }

    @Test func clientCertificateAuthenticatesWithoutAToken() async throws {
        let authority = try SimulatorCertificates.makeAuthority(name: "Test client CA")
        let identity = try SimulatorCertificates.issueClientCertificate(commonName: Harness.topic, from: authority)
        let simulator = try await harness.startSimulator(clientCertificateRootsPEM: [authority.certificatePEM])
        let client = try harness.client(
            for: simulator,
            authentication: .certificate(
                .pem(certificateChain: Array(identity.certificatePEM.utf8), privateKey: Array(identity.privateKeyPEM.utf8)))
        )
        try await withSimulatorAndClient(simulator, client) {
            _ = try await client.send(Harness.retraction(to: Harness.deviceToken(3)))
            #expect(simulator.inbox(for: Harness.deviceToken(3)).count == 1)
            #expect(simulator.statistics.providerTokens == 0)
        }
    }

    @Test func untrustedServerCertificateIsAConnectFailure() async throws {
        let simulator = try await harness.startSimulator()
        let other = try SimulatorCertificates.makeAuthority(name: "Someone else")
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                environment: .custom(host: "127.0.0.1", port: simulator.port),
                authentication: .token(key: APNsSigningKey(harness.signingKey), keyID: Harness.keyID, teamID: Harness.teamID),
                additionalTrustRootsPEM: [other.certificatePEM]
            )
        )
        try await withSimulatorAndClient(simulator, client) {
            let error = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(1))) }
            guard case .connectFailed(let reason)? = error else {
                Issue.record("\(String(describing: error))")
                return
            }
            #expect(reason.localizedCaseInsensitiveContains("certificate"))
        }
    }
}

@Suite("APNsClient metrics")
struct ClientMetricsTests {
    @Test func answersAreCountedAndTimedPerStatus() async throws {
        let harness = Harness()
        let metrics = TestMetrics()
        let simulator = try await harness.startSimulator(
            faults: APNsSimulatorFaults(unregisteredTokens: [Harness.deviceToken(9): Date()])
        )
        let client = try harness.client(for: simulator, metrics: metrics)
        try await withSimulatorAndClient(simulator, client) {
            for number in 0..<3 { _ = try await client.send(Harness.retraction(to: Harness.deviceToken(number))) }
            _ = try? await client.send(Harness.retraction(to: Harness.deviceToken(9)))
            #expect(metrics.counterTotal(label: "apns_pushes_total", dimensions: [("status", "200")]) == 3)
            #expect(metrics.counterTotal(label: "apns_pushes_total", dimensions: [("status", "410")]) == 1)
            let timer = try metrics.expectTimer("apns_push_duration_seconds", [("status", "200")])
            #expect(timer.values.count == 3)
            #expect(timer.values.allSatisfy { $0 > 0 })
        }
    }
}

@Suite("APNsClient connecting")
struct ClientConnectingTests {
    @Test func unreachableEndpointFailsAndTheSlotBacksOff() async throws {
        // A simulator that stopped leaves a port nothing listens on.
        let harness = Harness()
        let simulator = try await harness.startSimulator()
        let client = try harness.client(for: simulator)
        try await simulator.stop()
        // The backoff starts when the connect fails, after this instant.
        let started = ContinuousClock.now
        let first = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(1))) }
        guard case .connectFailed? = first else {
            Issue.record("expected connectFailed, got \(String(describing: first))")
            return
        }
        // Within the one-second backoff the next send fails at once, without a
        // new attempt (a loaded machine may take longer than that to get here).
        let second = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(2))) }
        guard case .connectFailed? = second else {
            Issue.record("expected connectFailed, got \(String(describing: second))")
            return
        }
        if ContinuousClock.now - started < .milliseconds(900) {
            #expect(client.connectionsOpened == 1)
        }
        await client.shutdown()
        await #expect(throws: APNsError.clientShutdown) { try await client.send(Harness.retraction(to: Harness.deviceToken(3))) }
    }

    @Test func everyConnectionSlotIsUsed() async throws {
        let harness = Harness()
        let simulator = try await harness.startSimulator()
        let client = try harness.client(for: simulator, connectionCount: 3)
        try await withSimulatorAndClient(simulator, client) {
            for number in 0..<30 { _ = try await client.send(Harness.retraction(to: Harness.deviceToken(number))) }
            #expect(client.connectionsOpened == 3)
            #expect(await eventually { simulator.statistics.connections == 3 })
        }
    }
}
