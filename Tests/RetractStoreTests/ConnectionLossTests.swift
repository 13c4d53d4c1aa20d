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
