import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

@testable import RetractStore

@Suite("A lost connection")
struct ConnectionLossTests {
    @Test func idempotentOperationsAreTriedAgainAndOthersAreReported() async throws {
        try await TestDatabase.withStore { store, _ in
            let attempts = NIOLockedValueBox(0)
            let value = try await store.perform("reading", idempotent: true) {
                let attempt = attempts.withLockedValue { attempts in
                    attempts += 1
                    return attempts
                }
                if attempt == 1 { throw StoreError(.connectionLost, "dropped") }
                return 42
            }
            #expect(value == 42)
            #expect(attempts.withLockedValue { $0 } == 2)

            attempts.withLockedValue { $0 = 0 }
            let error = await #expect(throws: StoreError.self) {
                try await store.perform("claiming", idempotent: false) {
                    attempts.withLockedValue { $0 += 1 }
                    throw StoreError(.connectionLost, "dropped")
                }
            }
            #expect(error?.code == .connectionLost)
            #expect(attempts.withLockedValue { $0 } == 1)

            // Two more drops than it tries: reported after the third attempt.
            attempts.withLockedValue { $0 = 0 }
            await #expect(throws: StoreError.self) {
                try await store.perform("reading", idempotent: true) {
                    attempts.withLockedValue { $0 += 1 }
                    throw StoreError(.connectionLost, "dropped")
                }
            }
            #expect(attempts.withLockedValue { $0 } == 3)

            // A statement that never answers is a lost connection too, after the limit.
            attempts.withLockedValue { $0 = 0 }
            let silent = await #expect(throws: StoreError.self) {
                try await store.perform("splitting", idempotent: true, answerLimit: .milliseconds(100)) { () async throws -> Int in
                    attempts.withLockedValue { $0 += 1 }
                    await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
                    return 1
                }
            }
            #expect(silent?.code == .connectionLost)
            #expect(attempts.withLockedValue { $0 } == 3)
        }
    }

    @Test func aStatementMadeWhileConnectionsAreLostIsGivenUpSoonerThanTheFullLimit() async throws {
        try await TestDatabase.withStore { store, _ in
            // A connection is lost...
            _ = await #expect(throws: StoreError.self) {
                try await store.perform("marking tokens dead", idempotent: false) { () async throws -> Int in
                    throw StoreError(.connectionLost, "dropped")
                }
            }
            // ...and the next statement is handed a connection that never answers, as PostgresNIO's
            // pool may lease one whose channel has just closed.
            let started = ContinuousClock.now
            let stalled = await #expect(throws: StoreError.self) {
                try await store.perform("claiming work", idempotent: false) { () async throws -> Int in
                    await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
                    return 1
                }
            }
            let waited = ContinuousClock.now - started
            #expect(stalled?.code == .connectionLost)
            #expect(stalled?.message.contains("within 10.0 seconds of a lost connection") == true, "\(String(describing: stalled))")
            #expect(waited >= RetractStore.answerLimitAfterLoss && waited < RetractStore.answerLimitAfterLoss + .seconds(5), "\(waited)")
            // A statement with nothing lost around it answers as usual.
            let answer = try await store.perform("reading", idempotent: true) { 7 }
            #expect(answer == 7)
        }
    }

    @Test func readsAndRecordsCarryOnAfterTheServerDropsEveryConnection() async throws {
        try await TestDatabase.withStore { store, url in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 0..<10))
            // Another session ends every connection the store holds, as a failover would.
            try await RetractStore.withStore(url: url, maximumConnections: 1, logger: TestDatabase.logger) { admin in
                _ = try await admin.client.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
                    logger: TestDatabase.logger
                ).collect()
            }
            #expect(try await store.countDevices(appID: app.id, references: ["msg"]) == 10)
            #expect(try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 10..<20)) == 10)
            #expect(try await store.devicePage(appID: app.id, references: ["msg"], limit: 100).devices.count == 20)
        }
    }
}
