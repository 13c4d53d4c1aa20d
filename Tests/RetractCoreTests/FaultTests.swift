import APNsSimulator
import FCMSimulator
import Foundation
import RetractAPNs
import RetractCore
import RetractFCM
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// The engine against faults of its ledger: a database that fails a commit
/// or refuses one item's result, a token registered again after it died.
/// Whatever fails, a retraction that ends `done` has every device sent, dead
/// or failed. Faults from outside the ledger (a push service that refuses a
/// token or a certificate, a key file rotated) are ``WorkerFaultTests``, on
/// the in-memory queue.
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
}
