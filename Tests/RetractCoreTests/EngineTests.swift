import APNsSimulator
import Foundation
import Logging
import RetractAPNs
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// The engine against a real ledger and the simulator over TLS, in one process.
@Suite("Retraction engine")
struct EngineTests {
    /// Retries quick enough that fault tests end soon.
    static let quickRetries = RetryPolicy(baseDelay: .milliseconds(10), maximumDelay: .milliseconds(200))

    /// An engine on a fresh ledger, sending to `apns`; quick retries so fault tests end soon.
    /// With `fcm`, FCM devices go to that simulator.
    static func withEngine(
        _ apns: SimulatedAPNs,
        fcm: SimulatedFCM? = nil,
        settings: EngineSettings = EngineSettings(
            window: 200, pageSize: 250, lanes: 3, idlePoll: .milliseconds(50),
            retryPolicy: quickRetries),
        credentialCheckInterval: Duration = .seconds(10),
        _ body: (RetractEngine) async throws -> Void
    ) async throws {
        try await TestDatabase.withStore { store, _ in
            try await WorkerTests.withTransports(apns, fcm: fcm, credentialCheckInterval: credentialCheckInterval) { transports in
                try await body(RetractEngine(store: store, transports: transports, settings: settings, logger: TestDatabase.logger))
            }
        }
    }

    /// Makes a retraction and works it to the end with one worker.
    static func retract(_ references: [ReferenceID], app: App, engine: RetractEngine) async throws -> RetractionStatus {
        let (retraction, _) = try await engine.startRetraction(app: app, target: .references(references), requestedBy: "tests")
        try await RetractionWorker(engine: engine).finish([retraction.id])
        return try await engine.status(of: retraction.id)
    }

    @Test func aChatMessageIsTakenBackFromEachOfItsThreeDevices() async throws {
        try await SimulatedAPNs.with { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let devices = TestTokens.tokens(0..<3)
                _ = try await engine.record(app: app, reference: "msg-8812", tokens: devices)
                _ = try await engine.record(app: app, reference: "msg-8813", tokens: devices)

                let status = try await Self.retract(["msg-8812"], app: app, engine: engine)
                #expect(status.retraction.state == .done)
                #expect(status.retraction.counts == RetractionCounts(total: 3, sent: 3))

                for device in devices {
                    let inbox = apns.inbox(device)
                    try #require(inbox.count == 1)
                    #expect(inbox[0].pushType == "background")
                    #expect(inbox[0].headers["apns-priority"] == "5")
                    #expect(RetractPayload.retraction(in: inbox[0].userInfo) == ["msg-8812"])
                    // The app, holding both messages, removes exactly the retracted one.
                    let center = InMemoryNotificationCenter(delivered: [
                        DeliveredNotification(identifier: "a", referenceID: "msg-8812"),
                        DeliveredNotification(identifier: "b", referenceID: "msg-8813"),
                    ])
                    #expect(await RetractionHandler(center: center).handle(userInfo: inbox[0].userInfo) == .removed(["a"]))
                    #expect(center.delivered.map(\.identifier) == ["b"])
                }
            }
        }
    }

    @Test func deadTokensAreMarkedAndSkippedByTheNextRetraction() async throws {
        let unregistered = TestTokens.token(1)
        let bad = TestTokens.token(2)
        let since = Date(timeIntervalSince1970: 1_790_000_000)
        let faults = APNsSimulatorFaults(unregisteredTokens: [unregistered.hex: since], badDeviceTokens: [bad.hex])
        try await SimulatedAPNs.with(faults: faults) { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "news"), actor: "tests")
                let devices = TestTokens.tokens(0..<10)
                _ = try await engine.record(app: app, reference: "first", tokens: devices)
                _ = try await engine.record(app: app, reference: "second", tokens: devices)

                let first = try await Self.retract(["first"], app: app, engine: engine)
                #expect(first.retraction.counts == RetractionCounts(total: 10, sent: 8, dead: 1, failed: 1))
                #expect(first.failures == ["BadDeviceToken": 1])
                let markedUnregistered = try await engine.store.deadToken(unregistered, appID: app.id)
                #expect(markedUnregistered?.reason == "Unregistered")
                #expect(markedUnregistered?.since == since)
                // A bad token is a failure, not a death: usually the app's environment, not the device.
                #expect(try await engine.store.deadToken(bad, appID: app.id) == nil)

                apns.simulator.clearInbox()
                let rejectedBefore = apns.simulator.statistics.rejected
                let second = try await Self.retract(["second"], app: app, engine: engine)
                // The dead device is counted, skipped; the bad one is tried again.
                #expect(second.retraction.counts == RetractionCounts(total: 10, sent: 8, dead: 1, failed: 1, skipped: 1))
                #expect(apns.inbox(unregistered).isEmpty)
                #expect(apns.simulator.statistics.rejected == rejectedBefore + 1)
            }
        }
    }

    @Test func aDryRunCountsDevicesAndSendsNothing() async throws {
        try await SimulatedAPNs.with { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "dry"), actor: "tests")
                _ = try await engine.record(app: app, reference: "r", tokens: TestTokens.tokens(0..<30))
                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .references(["r"]), requestedBy: "tests", dryRun: true)
                #expect(retraction.state == .done)
                #expect(retraction.counts.total == 30)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                #expect(apns.simulator.statistics.accepted == 0)
                #expect(try await engine.store.queuedWorkCount() == 0)
            }
        }
    }

    @Test func unrecordedReferencesAreNamed() async throws {
        try await SimulatedAPNs.with { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "refs"), actor: "tests")
                _ = try await engine.record(app: app, reference: "known", tokens: TestTokens.tokens(0..<2))
                let error = await #expect(throws: RetractError.self) {
                    try await engine.startRetraction(app: app, target: .references(["nope"]), requestedBy: "tests", requireRecorded: true)
                }
                #expect(error?.code == .unknownReference)
                #expect(error?.message == "app refs has no recorded delivery of \"nope\"")
                let (_, unknown) = try await engine.startRetraction(
                    app: app, target: .references(["known", "nope"]), requestedBy: "tests", requireRecorded: true)
                #expect(unknown == ["nope"])
            }
        }
    }

    @Test func twoWorkersShareOneRetractionAndReachEveryDevice() async throws {
        try await SimulatedAPNs.with { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "shared"), actor: "tests")
                let devices = TestTokens.tokens(0..<3000)
                _ = try await engine.record(app: app, reference: "r", tokens: devices)
                let (retraction, _) = try await engine.startRetraction(app: app, target: .references(["r"]), requestedBy: "tests")
                async let one: Void = RetractionWorker(engine: engine, name: "one").finish([retraction.id])
                async let two: Void = RetractionWorker(engine: engine, name: "two").finish([retraction.id])
                _ = try await (one, two)
                let status = try await engine.status(of: retraction.id)
                #expect(status.retraction.counts == RetractionCounts(total: 3000, sent: 3000))
                #expect(devices.allSatisfy { apns.inbox($0).count == 1 })
            }
        }
    }

    @Test func sendingAnOriginalRecordsItsDevicesAndTriesEveryTokenGiven() async throws {
        let dead = TestTokens.token(3)
        try await SimulatedAPNs.with(faults: APNsSimulatorFaults(unregisteredTokens: [dead.hex: Date()])) { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "sender"), actor: "tests")
                let devices = TestTokens.tokens(0..<5)
                let payload = Data(#"{"aps":{"alert":{"title":"Hi"}},"chat":{"room":"r1"}}"#.utf8)
                let report = try await engine.send(app: app, reference: "msg-1", tokens: devices, payload: payload)
                #expect(report.accepted == 4)
                // Every device is recorded before it is sent to, the dead one too: a retraction counts it.
                #expect(report.recorded == 5)
                #expect(report.dead.map(\.token) == [dead])
                #expect(try await engine.store.countDevices(appID: app.id, references: ["msg-1"]) == 5)
                // A token the caller sends to is tried: the app may have registered it again. This one is still dead.
                let next = try await engine.send(app: app, reference: "msg-2", tokens: devices, payload: payload)
                #expect((next.accepted, next.dead.count) == (4, 1))
                #expect(apns.inbox(dead).isEmpty)

                let received = apns.inbox(devices[0])
                try #require(received.count == 2)
                #expect(received[0].pushType == "alert")
                #expect(received[0].collapseID == "msg-1")
                #expect(DeliveredNotification(identifier: "x", userInfo: received[0].userInfo).referenceID == "msg-1")

                // Retracting the first: by RetractKit, the device then shows only the second.
                _ = try await Self.retract(["msg-1"], app: app, engine: engine)
                let screen = await APNsSimulatedDevice.replay(apns.inbox(devices[0]))
                #expect(screen.showing.map(\.referenceID) == ["msg-2"])
                #expect(screen.outcomes == [.removed(["msg-1"])])
            }
        }
    }

    @Test func anOriginalWithoutAnAPSObjectIsRefusedBeforeSending() async throws {
        try await SimulatedAPNs.with { apns in
            try await Self.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "bad"), actor: "tests")
                let error = await #expect(throws: RetractError.self) {
                    try await engine.send(app: app, reference: "m", tokens: [TestTokens.token(1)], payload: Data(#"{"chat":1}"#.utf8))
                }
                #expect(error?.code == .invalidInput)
                #expect(error?.message == "payload: it needs an \"aps\" object")
                #expect(apns.simulator.statistics.accepted + apns.simulator.statistics.rejected == 0)
            }
        }
    }
}
