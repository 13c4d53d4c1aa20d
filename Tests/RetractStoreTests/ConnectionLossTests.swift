import Foundation
import PostgresNIO
import RetractKit
import RetractTestSupport
import Testing

@testable import RetractStore

@Suite("A lost connection")
struct ConnectionLossTests {
    @Test func idempotentOperationsAreTriedAgainAndOthersAreReported() async throws {
        try await TestDatabase.withStore { store, _ in
            var attempts = 0
            let value = try await store.perform("reading", idempotent: true) {
                attempts += 1
                if attempts == 1 { throw StoreError(.connectionLost, "dropped") }
                return 42
            }
            #expect(value == 42)
            #expect(attempts == 2)

            attempts = 0
            let error = await #expect(throws: StoreError.self) {
                try await store.perform("claiming", idempotent: false) {
                    attempts += 1
                    throw StoreError(.connectionLost, "dropped")
                }
            }
            #expect(error?.code == .connectionLost)
            #expect(attempts == 1)

            // Two more drops than it tries: reported after the third attempt.
            attempts = 0
            await #expect(throws: StoreError.self) {
                try await store.perform("reading", idempotent: true) {
                    attempts += 1
                    throw StoreError(.connectionLost, "dropped")
                }
            }
            #expect(attempts == 3)
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
