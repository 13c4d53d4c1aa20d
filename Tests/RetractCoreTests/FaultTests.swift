import APNsSimulator
import Crypto
import FCMSimulator
import Foundation
import RetractAPNs
import RetractCore
import RetractFCM
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import SimulatorSupport
import Testing

/// The engine against faults from outside: a push service that refuses one
/// token, goes away or refuses a certificate; a database that fails a commit
/// or refuses one item's result; files rotated under it. Whatever fails, a
/// retraction that ends `done` has every device sent, dead or failed.
@Suite("Retraction engine under faults")
struct FaultTests {
    /// Every device of a done retraction is accounted for: sent, dead or failed.
    static func expectSettled(_ status: RetractionStatus, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status.retraction.state == .done, sourceLocation: sourceLocation)
        #expect(status.retraction.counts.isSettled, "\(status.retraction.counts)", sourceLocation: sourceLocation)
    }

    /// `body`, or a failure once `limit` has passed: a retraction that never ends must not hang the tests.
    static func within<Value: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let value = try await group.next() ?? nil else { throw TimedOut(limit: limit) }
            return value
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        var limit: Duration
        var description: String { "did not end within \(limit)" }
    }

    @Test func aTokenOfAnotherFirebaseProjectFailsThatDeviceAndNotTheRetraction() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                try await FCMEngineTests.withEngine(apns, fcm) { engine in
                    let app = try await engine.store.registerApp(FCMEngineTests.mixedApp(apns, fcm, name: "mixed"), actor: "tests")
                    let iPhones = TestTokens.tokens(0..<10)
                    let androids = SimulatedFCM.tokens(0..<10)
                    let foreign = PushService.fcm.text(of: androids[4])
                    for reference: ReferenceID in ["m1", "m2"] {
                        _ = try await engine.record(app: app, reference: reference, tokens: iPhones)
                        _ = try await engine.record(app: app, reference: reference, tokens: androids, via: .fcm)
                    }
                    fcm.simulator.script([.senderIDMismatch, .senderIDMismatch], for: foreign)

                    // Retracting again meets the same token: it fails that device again, never the retraction.
                    for reference: ReferenceID in ["m1", "m2"] {
                        let status = try await EngineTests.retract([reference], app: app, engine: engine)
                        Self.expectSettled(status)
                        #expect(status.retraction.counts == RetractionCounts(total: 20, sent: 19, failed: 1))
                        #expect(status.failures.keys.map { $0.contains("SENDER_ID_MISMATCH") } == [true])
                    }
                    for token in iPhones { #expect(apns.inbox(token).count == 2) }
                    for token in androids where token != androids[4] { #expect(fcm.inbox(token).count == 2) }
                    #expect(fcm.inbox(androids[4]).isEmpty)
                }
            }
        }
    }

    @Test func aStopWhoseCommitFailsStopsNothingUntilItCommits() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                let settings = EngineSettings(
                    window: 50, pageSize: 10, lanes: 3, lease: .seconds(1), idlePoll: .milliseconds(50),
                    retryPolicy: EngineTests.quickRetries)
                try await EngineTests.withEngine(apns, fcm: fcm, settings: settings) { engine in
                    let app = try await engine.store.registerApp(FCMEngineTests.mixedApp(apns, fcm, name: "restart"), actor: "tests")
                    let devices = SimulatedFCM.tokens(0..<200)
                    _ = try await engine.record(app: app, reference: "r", tokens: devices, via: .fcm)
                    // The first device's answer refuses the app's credentials, once; the transaction
                    // that would stop the retraction fails as PostgreSQL restarting would fail it.
                    fcm.simulator.script([.thirdPartyAuthError], for: PushService.fcm.text(of: devices[0]))
                    try await TestDatabase.execute("CREATE SEQUENCE stop_attempts", on: engine.store)
                    try await TestDatabase.execute(
                        """
                        CREATE FUNCTION refuse_first_stop() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN
                            IF NEW.state = 'failed' AND nextval('stop_attempts') = 1 THEN
                                RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = 'admin_shutdown';
                            END IF;
                            RETURN NEW;
                        END $$
                        """, on: engine.store)
                    try await TestDatabase.execute(
                        "CREATE TRIGGER refuse_first_stop BEFORE UPDATE ON retractions FOR EACH ROW EXECUTE FUNCTION refuse_first_stop()",
                        on: engine.store)

                    let status = try await Self.within(.seconds(60)) { try await EngineTests.retract(["r"], app: app, engine: engine) }
                    // The stop committed when the database was back, and the retraction says why it stopped.
                    // Until then the other lanes sent their pages whole: never `done` with devices left out.
                    #expect(status.retraction.state == .failed)
                    #expect(status.retraction.failure?.contains("THIRD_PARTY_AUTH_ERROR") == true)
                    let counts = status.retraction.counts
                    #expect(counts.sent + counts.dead + counts.failed <= counts.total)
                    let sent = devices.filter { !fcm.inbox($0).isEmpty }.count
                    #expect(sent >= counts.sent)
                    #expect(try await TestDatabase.value("SELECT last_value FROM stop_attempts", of: Int.self, on: engine.store) ?? 0 >= 2)
                    // Recorded again and retracted once the credentials work: every device, and the account settled.
                    _ = try await engine.record(app: app, reference: "r2", tokens: devices, via: .fcm)
                    let again = try await EngineTests.retract(["r2"], app: app, engine: engine)
                    Self.expectSettled(again)
                    #expect(again.retraction.counts == RetractionCounts(total: 200, sent: 200))
                }
            }
        }
    }

    @Test func aTokenRegisteredAgainIsSentANewerNotificationAndItsRetraction() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "reinstall"), actor: "tests")
                let devices = TestTokens.tokens(0..<5)
                let reinstalled = devices[2]
                _ = try await engine.record(app: app, reference: "old", tokens: devices)
                apns.simulator.unregister(deviceToken: reinstalled.hex)
                let first = try await EngineTests.retract(["old"], app: app, engine: engine)
                #expect(first.retraction.counts == RetractionCounts(total: 5, sent: 4, dead: 1))
                #expect(try await engine.store.deadToken(reinstalled, appID: app.id) != nil)

                // The app is installed again with the same token, and a newer notification is sent to it.
                apns.simulator.register(deviceToken: reinstalled.hex)
                let payload = Data(#"{"aps":{"alert":{"title":"New message"}}}"#.utf8)
                let sent = try await engine.send(app: app, reference: "new", tokens: devices, payload: payload)
                #expect((sent.accepted, sent.dead.count) == (5, 0))
                let second = try await EngineTests.retract(["new"], app: app, engine: engine)
                #expect(second.retraction.counts == RetractionCounts(total: 5, sent: 5))
                let screen = await APNsSimulatedDevice.replay(apns.inbox(reinstalled))
                #expect(screen.showing.isEmpty)
                #expect(screen.outcomes == [.removed(["new"])])

                // What it was sent before it died stays skipped, and the account says so.
                let pushesBefore = apns.inbox(reinstalled).count
                let third = try await EngineTests.retract(["old"], app: app, engine: engine)
                Self.expectSettled(third)
                #expect(third.retraction.counts == RetractionCounts(total: 5, sent: 4, dead: 1, skipped: 1))
                #expect(apns.inbox(reinstalled).count == pushesBefore)
            }
        }
    }

    @Test func badDeviceTokenIsAFailureWithAHintNotADeath() async throws {
        let devices = TestTokens.tokens(0..<10)
        let faults = APNsSimulatorFaults(badDeviceTokens: Set(devices.prefix(8).map(\.hex)))
        try await SimulatedAPNs.with(faults: faults) { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "wrong-env"), actor: "tests")
                for reference: ReferenceID in ["a", "b"] { _ = try await engine.record(app: app, reference: reference, tokens: devices) }
                for reference: ReferenceID in ["a", "b"] {
                    let status = try await EngineTests.retract([reference], app: app, engine: engine)
                    Self.expectSettled(status)
                    #expect(status.retraction.counts == RetractionCounts(total: 10, sent: 2, failed: 8))
                    #expect(status.failures == ["BadDeviceToken": 8])
                    #expect(status.hints.count == 1)
                    #expect(status.hints.first?.contains("8 of 10 devices were refused with BadDeviceToken: the app's environment") == true)
                }
                // Not dead: the second retraction tried them again.
                #expect(try await engine.store.deadToken(devices[0], appID: app.id) == nil)
                #expect(apns.simulator.statistics.rejected == 16)
            }
        }
    }

    @Test func aWorkItemThatNeverFinishesIsGivenUpAndItsDevicesCountedFailed() async throws {
        let devices = TestTokens.tokens(0..<30)
        try await SimulatedAPNs.with(faults: APNsSimulatorFaults(unregisteredTokens: [devices[15].hex: Date()])) { apns in
            let settings = EngineSettings(
                window: 50, pageSize: 10, lanes: 2, lease: .seconds(1), idlePoll: .milliseconds(50), itemAttempts: 3,
                retryPolicy: EngineTests.quickRetries)
            try await EngineTests.withEngine(apns, settings: settings) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "poison"), actor: "tests")
                _ = try await engine.record(app: app, reference: "r", tokens: devices)
                // The page holding device 15 can never be finished: the ledger refuses its dead token.
                try await TestDatabase.execute(
                    """
                    CREATE FUNCTION refuse_dead_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'poison: the ledger refuses this token'; END $$
                    """, on: engine.store)
                try await TestDatabase.execute(
                    "CREATE TRIGGER refuse_dead_tokens BEFORE INSERT ON dead_tokens FOR EACH ROW EXECUTE FUNCTION refuse_dead_tokens()",
                    on: engine.store)

                let status = try await Self.within(.seconds(60)) { try await EngineTests.retract(["r"], app: app, engine: engine) }
                Self.expectSettled(status)
                #expect(status.retraction.counts == RetractionCounts(total: 30, sent: 20, failed: 10))
                let reason = try #require(status.failures.keys.first)
                #expect(status.failures.count == 1)
                #expect(reason.hasPrefix("given up after 3 attempts: "))
                #expect(reason.contains("poison: the ledger refuses this token"))
                // The other pages were sent once; the poison page once per attempt.
                for (index, device) in devices.enumerated() {
                    #expect(apns.inbox(device).count == ((10..<20).contains(index) ? (index == 15 ? 0 : 3) : 1), "device \(index)")
                }
            }
        }
    }

    @Test func aClientCertificateAPNsRefusesStopsTheRetraction() async throws {
        let trusted = try SimulatorCertificates.makeAuthority(name: "The authority APNs trusts")
        let other = try SimulatorCertificates.makeAuthority(name: "Someone else's authority")
        try await SimulatedAPNs.with(clientCertificateRootsPEM: [trusted.certificatePEM]) { apns in
            try await EngineTests.withEngine(apns) { engine in
                let certificate = try SimulatorCertificates.issueClientCertificate(commonName: "com.example.certified", from: other)
                let path = try apns.file("certified.pem", certificate.certificatePEM + "\n" + certificate.privateKeyPEM)
                let app = try await engine.store.registerApp(
                    AppRegistration(
                        name: "certified", topic: "com.example.certified", environment: .sandbox, endpoint: apns.endpoint,
                        authentication: .certificate(path: path)),
                    actor: "tests")
                _ = try await engine.record(app: app, reference: "r", tokens: TestTokens.tokens(0..<5))

                let status = try await Self.within(.seconds(60)) { try await EngineTests.retract(["r"], app: app, engine: engine) }
                #expect(status.retraction.state == .failed)
                #expect(
                    status.retraction.failure?.contains("APNs refused the client certificate") == true, "\(status.retraction.failure ?? "")"
                )
                #expect(apns.simulator.statistics.accepted == 0)
            }
        }
    }

    @Test func aKeyFileRotatedInPlaceIsReadAgain() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns, credentialCheckInterval: .zero) { engine in
                // The file holds a key APNs does not know (yet): every provider token is refused.
                let keyPath = try apns.file("AuthKey_rotated.p8", P256.Signing.PrivateKey().pemRepresentation)
                let app = try await engine.store.registerApp(apns.registration(name: "rotated", keyPath: keyPath), actor: "tests")
                let devices = TestTokens.tokens(0..<20)
                for reference: ReferenceID in ["before", "after"] {
                    _ = try await engine.record(app: app, reference: reference, tokens: devices)
                }
                let before = try await EngineTests.retract(["before"], app: app, engine: engine)
                #expect(before.retraction.state == .failed)

                // The operator puts the registered key in the same file.
                try Data(contentsOf: URL(fileURLWithPath: apns.keyPath)).write(to: URL(fileURLWithPath: keyPath))
                let after = try await EngineTests.retract(["after"], app: app, engine: engine)
                Self.expectSettled(after)
                #expect(after.retraction.counts == RetractionCounts(total: 20, sent: 20))
            }
        }
    }
}
