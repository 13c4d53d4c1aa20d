import FCMSimulator
import Foundation
import NIOConcurrencyHelpers
import RetractFCM
import RetractKit
import Testing

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current = NIOLockedValueBox(Date())
    var now: Date { current.withLockedValue { $0 } }
    func advance(by seconds: TimeInterval) { current.withLockedValue { $0 += seconds } }
}

/// An FCM simulator that knows one service account, and clients that trust it.
struct FCMHarness {
    static let projectID = "retract-test"
    let account: FCMServiceAccount
    let simulator: FCMSimulator

    static func start(
        accessTokenLifetime: Int = 3600, clock: TestClock? = nil, knownAccounts: [FCMServiceAccount]? = nil
    ) async throws -> FCMHarness {
        let account = try FCMSimulator.makeServiceAccount(projectID: projectID)
        let simulator = try await FCMSimulator.start(
            FCMSimulatorConfiguration(
                accounts: (knownAccounts ?? [account]).map(FCMSimulatorConfiguration.Account.init),
                accessTokenLifetime: accessTokenLifetime,
                now: { clock?.now ?? Date() }))
        return FCMHarness(account: account, simulator: simulator)
    }

    func client(clock: TestClock? = nil, refreshMargin: TimeInterval = 300, account: FCMServiceAccount? = nil) throws -> FCMClient {
        try FCMClient(
            account: account ?? self.account,
            configuration: FCMClientConfiguration(
                messagesBaseURL: simulator.baseURL, tokenURI: simulator.tokenURI,
                additionalTrustRootsPEM: [simulator.certificateAuthorityPEM],
                requestTimeout: .seconds(10), tokenRefreshMargin: refreshMargin, now: { clock?.now ?? Date() }))
    }

    /// Runs `body` with a started simulator and a client, stopping both after.
    static func with(
        accessTokenLifetime: Int = 3600, clock: TestClock? = nil, clientClock: TestClock? = nil, refreshMargin: TimeInterval = 300,
        _ body: (FCMHarness, FCMClient) async throws -> Void
    ) async throws {
        let harness = try await start(accessTokenLifetime: accessTokenLifetime, clock: clock)
        let client = try harness.client(clock: clientClock ?? clock, refreshMargin: refreshMargin)
        do {
            try await body(harness, client)
        } catch {
            await client.shutdown()
            await harness.simulator.stop()
            throw error
        }
        await client.shutdown()
        await harness.simulator.stop()
    }
}

/// The FCM messages the engine sends to retract `references`: one, or one
/// per reference in the legacy dialect.
func retractionMessages(_ references: [ReferenceID], dialect: PayloadDialect = .canonical) throws -> [FCMMessage] {
    try PayloadBuilder(dialect: dialect).retractionBodies(for: references).map { try FCMMessage(body: $0, kind: .background) }
}

/// The one FCM message that retracts `references` in the canonical dialect.
func retractionMessage(_ references: [ReferenceID]) throws -> FCMMessage {
    try #require(try retractionMessages(references).first)
}
