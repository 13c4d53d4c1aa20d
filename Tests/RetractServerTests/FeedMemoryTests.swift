import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// What a server keeps in memory to say "nothing new" without the ledger,
/// kept by the ledger's own notifications.
@Suite("Device feed memory")
struct FeedMemoryTests {
    @Test func notificationsAreReadAsTheLedgerWritesThem() {
        #expect(RetractStore.feedNotification("keys") == .keys)
        #expect(RetractStore.feedNotification("7 123 *") == .retraction(appID: 7, xid: 123, devices: nil))
        #expect(
            RetractStore.feedNotification("7 123 00000000000000ff,0000000000000100")
                == .retraction(appID: 7, xid: 123, devices: [255, 256]))
        // Digests that cannot be read count as every device; a payload that cannot be read, as nothing known.
        #expect(RetractStore.feedNotification("7 123 00ff,zz") == .retraction(appID: 7, xid: 123, devices: nil))
        #expect(RetractStore.feedNotification("7 123 ") == .retraction(appID: 7, xid: 123, devices: nil))
        for odd in ["", "7", "7 x *", "x 1 *", "7 1 * extra", "tick 7 1", "tick \(UUID()) x"] {
            #expect(RetractStore.feedNotification(odd) == .unreadable)
        }
        let server = UUID()
        #expect(RetractStore.feedNotification("tick \(server.uuidString.lowercased()) 12") == .tick(server: server, number: 12))
    }

    /// Memory answers only while the server hears its own ticks back: one
    /// that has heard none lately (here it ticks once an hour) asks the
    /// ledger, for a notification may be late.
    @Test(.timeLimit(.minutes(2))) func withoutATickHeardLatelyMemoryAnswersNothing() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Self.registerApp(store)
            let phone = TestTokens.token(1)
            try await store.record([Delivery(appID: app.id, reference: "m1", token: phone, sentAt: Date())])
            _ = try await store.createRetraction(RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "t"))
            let memory = FeedMemory(store: store, logger: TestDatabase.logger, tick: .seconds(3600), freshness: .seconds(1))
            let running = Task { try await memory.run() }
            defer { running.cancel() }
            let read = try await Self.settled(store, phone, app) { $0.retractions.count == 1 }
            func quiet() async -> Bool { await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: read.horizon) }
            // The first answer reads the app from the ledger; the next comes from memory, fresh from the first tick.
            try await Self.eventually { await quiet() }
            try await Self.eventually { await quiet() }
            try await Task.sleep(for: .milliseconds(1200))
            #expect(!(await quiet()))
        }
    }

    @Test func aDevicesDigestIsTheOneTheLedgerNotifies() async throws {
        try await TestDatabase.withStore { store, _ in
            for token in [TestTokens.token(5), DeviceToken(bytes: Array("fcm-registration-token:APA91b".utf8))] {
                let bytes = ByteBuffer(bytes: token.bytes)
                let hex = try #require(try await Self.scalar(store, "SELECT encode(substr(sha256(\(bytes)), 1, 8), 'hex')"))
                #expect(UInt64(hex, radix: 16) == DeviceDigest.of(token))
            }
        }
    }

    @Test(.timeLimit(.minutes(2))) func aDeviceIsQuietUntilARetractionTakesIt() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Self.registerApp(store)
            let (phone, tablet) = (TestTokens.token(1), TestTokens.token(2))
            for (reference, tokens) in [("m1", [phone, tablet]), ("m2", [tablet]), ("m3", [phone])] {
                try await store.record(tokens.map { Delivery(appID: app.id, reference: ReferenceID(reference), token: $0, sentAt: Date()) })
            }
            _ = try await store.createRetraction(RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "t"))
            let memory = FeedMemory(store: store, logger: TestDatabase.logger)
            let running = Task { try await memory.run() }
            defer { running.cancel() }
            let read = try await Self.settled(store, phone, app) { $0.retractions.count == 1 }
            let horizon = read.horizon

            try await Self.eventually { memory.isListening }
            // Once listening, the app is read from the ledger: both devices quiet since the page's horizon.
            try await Self.eventually { await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: horizon) }
            // From memory while it hears its ticks (``FeedMemory``): eventually, on a busy machine.
            try await Self.eventually { await memory.isQuiet(appID: app.id, device: DeviceDigest.of(tablet), since: horizon) }
            // Not before it: m1's retraction is at or past an earlier horizon, for every device.
            #expect(!(await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: read.cursor.transaction)))

            // m2 takes the tablet only.
            _ = try await store.createRetraction(RetractionRequest(appID: app.id, target: .references(["m2"]), requestedBy: "t"))
            try await Self.eventually { !(await memory.isQuiet(appID: app.id, device: DeviceDigest.of(tablet), since: horizon)) }
            try await Self.eventually { await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: horizon) }

            // A dry run takes nothing; m3 takes the phone.
            _ = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .references(["m3"]), requestedBy: "t", dryRun: true))
            try await Self.eventually { await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: horizon) }
            _ = try await store.createRetraction(RetractionRequest(appID: app.id, target: .references(["m3"]), requestedBy: "t"))
            try await Self.eventually { !(await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: horizon)) }
            let later = try await Self.settled(store, phone, app) { $0.retractions.count == 2 }
            try await Self.eventually { await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: later.horizon) }

            // Every device, as a retraction of more than 100,000 says it.
            let everyDevice = "'\(app.id) ' || pg_current_xact_id()::text || ' *'"
            _ = try await Self.scalar(store, "SELECT pg_notify('retract_feed', \(unescaped: everyDevice))::text")
            try await Self.eventually { !(await memory.isQuiet(appID: app.id, device: DeviceDigest.of(phone), since: later.horizon)) }
            #expect(!(await memory.isQuiet(appID: app.id, device: DeviceDigest.of(TestTokens.token(9)), since: later.horizon)))
        }
    }

    @Test(.timeLimit(.minutes(2))) func aRevokedKeyIsForgottenAtOnce() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Self.registerApp(store)
            let secret = APIKeySecret.generate()
            let hash = APIKeySecret.hash(secret)
            try await store.createAPIKey(APIKeyRecord(name: "phones", keyHash: hash, scopes: [.client], appIDs: [app.id], createdBy: "t"))
            let memory = FeedMemory(store: store, logger: TestDatabase.logger)
            let running = Task { try await memory.run() }
            defer { running.cancel() }
            try await Self.eventually { memory.isListening }
            #expect(try await memory.apiKey(hash: hash)?.name == "phones")
            // Kept: a change the ledger does not notify (triggers off, as on a replica) is not seen...
            try await store.client.withTransaction(logger: TestDatabase.logger) { connection in
                try await connection.query("SET LOCAL session_replication_role = replica", logger: TestDatabase.logger)
                try await connection.query("UPDATE api_keys SET name = 'renamed'", logger: TestDatabase.logger)
            }
            #expect(try await store.apiKey(hash: hash)?.name == "renamed")
            #expect(try await memory.apiKey(hash: hash)?.name == "phones")
            // ...and a revocation, notified at its commit, empties the keys.
            #expect(try await store.revokeAPIKey(id: try #require(try await store.apiKey(hash: hash)).id, actor: "t"))
            try await Self.eventually { (try? await memory.apiKey(hash: hash))??.revokedAt != nil }
        }
    }

    static func registerApp(_ store: RetractStore) async throws -> App {
        try await store.registerApp(
            AppRegistration(
                name: "chat", topic: "com.example.chat", environment: .sandbox,
                authentication: .token(keyID: "KEY1234567", teamID: "TEAM123456", keyPath: "/keys/AuthKey.p8")),
            actor: "tests")
    }

    static func scalar(_ store: RetractStore, _ query: PostgresQuery) async throws -> String? {
        for try await value in try await store.client.query(query, logger: TestDatabase.logger).decode(String.self) { return value }
        return nil
    }

    static func settled(
        _ store: RetractStore, _ token: DeviceToken, _ app: App, _ done: (DeviceFeedPage) -> Bool
    ) async throws -> DeviceFeedPage {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let page = try await store.retractions(forDevice: token, appID: app.id, limit: 10)
            if done(page) || ContinuousClock.now > deadline { return page }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Polls `condition` for up to ten seconds.
    static func eventually(_ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for _ in 0..<200 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("condition not met within ten seconds", sourceLocation: sourceLocation)
    }
}
