import APNsSimulator
import Foundation
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// A message deleted while its own fan-out is still running: deliveries
/// recorded after the retraction are retracted at once, and a send still
/// running stops.
@Suite("Late deliveries and racing sends")
struct LateDeliveryTests {
    /// The retractions the ledger made of late deliveries, newest last.
    static func lateRetractions(_ engine: RetractEngine, app: App) async throws -> [Retraction] {
        var found: [Retraction] = []
        for entry in try await engine.store.auditLog(appID: app.id).reversed()
        where entry.action == "retraction.created" && entry.actor == RetractStore.lateDeliveryActor {
            if let id = entry.subject.flatMap(UUID.init(uuidString:)), let retraction = try await engine.store.retraction(id: id) {
                found.append(retraction)
            }
        }
        return found
    }

    @Test func aDeliveryRecordedAfterItsRetractionIsRetractedInTheSameMode() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let early = TestTokens.tokens(0..<3)
                let late = TestTokens.tokens(3..<5)
                _ = try await engine.record(app: app, reference: "m1", tokens: early, collapseID: "m1")
                _ = try await engine.record(app: app, reference: "m2", tokens: early + late)
                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .references(["m1"]), requestedBy: "tests", mode: .serviceExtension, badge: 1)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                #expect(try await Self.lateRetractions(engine, app: app).isEmpty)

                // The fan-out of m1 was still running: two more devices are recorded after its retraction.
                #expect(try await engine.record(app: app, reference: "m1", tokens: late, collapseID: "m1") == 2)
                let made = try await Self.lateRetractions(engine, app: app)
                try #require(made.count == 1)
                #expect(made[0].references == ["m1"])
                #expect((made[0].mode, made[0].badge) == (.serviceExtension, 1))
                #expect(made[0].counts.total == 2)
                try await RetractionWorker(engine: engine).finish([made[0].id])
                let status = try await engine.status(of: made[0].id)
                #expect(status.retraction.state == .done)
                #expect(status.retraction.counts == RetractionCounts(total: 2, sent: 2))
                for device in late {
                    let inbox = apns.inbox(device)
                    try #require(inbox.count == 1)
                    #expect(inbox[0].pushType == "alert")
                    #expect(inbox[0].collapseID == "m1")
                    #expect(RetractPayload.retraction(in: inbox[0].userInfo) == ["m1"])
                }
                // The early devices got their one push, not another.
                for device in early { #expect(apns.inbox(device).count == 1) }

                // Recorded again (a retry), nothing new: no second retraction. Other references: none.
                #expect(try await engine.record(app: app, reference: "m1", tokens: late, collapseID: "m1") == 0)
                _ = try await engine.record(app: app, reference: "m3", tokens: late)
                #expect(try await Self.lateRetractions(engine, app: app).count == 1)
                // A dry run retracts nothing, so what is recorded after it is not late.
                _ = try await engine.startRetraction(app: app, target: .references(["m3"]), requestedBy: "tests", dryRun: true)
                _ = try await engine.record(app: app, reference: "m3", tokens: early)
                #expect(try await Self.lateRetractions(engine, app: app).count == 1)
            }
        }
    }

    @Test func anOriginalRetractedBeforeItIsSentIsSentToNoOne() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let devices = TestTokens.tokens(0..<3)
                _ = try await engine.record(app: app, reference: "m1", tokens: Array(devices.prefix(1)))
                // The message is deleted before the backend's push job runs.
                let (retraction, _) = try await engine.startRetraction(app: app, target: .references(["m1"]), requestedBy: "chat")
                let report = try await engine.send(
                    app: app, reference: "m1", tokens: devices, payload: Data(#"{"aps":{"alert":"hi"}}"#.utf8))
                #expect((report.accepted, report.recorded, report.spared) == (0, 0, 3))
                for device in devices { #expect(apns.inbox(device).isEmpty) }
                // Nothing was recorded, so no late retraction either; the first retraction has its one device.
                #expect(try await Self.lateRetractions(engine, app: app).isEmpty)
                #expect(try await engine.store.countDevices(appID: app.id, references: ["m1"]) == 1)
                #expect(retraction.counts.total == 1)
            }
        }
    }

    @Test func aRetractionWhileTheOriginalIsBeingSentSparesTheRest() async throws {
        var faults = APNsSimulatorFaults()
        faults.latency = .milliseconds(150)
        try await SimulatedAPNs.with(faults: faults) { apns in
            let settings = EngineSettings(
                window: 200, pageSize: 250, lanes: 3, idlePoll: .milliseconds(50), recordBatch: 2, retryPolicy: EngineTests.quickRetries)
            try await EngineTests.withEngine(apns, settings: settings) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "news"), actor: "tests")
                let devices = TestTokens.tokens(0..<12)
                let payload = Data(#"{"aps":{"alert":{"body":"Wrong headline"}}}"#.utf8)
                let sending = Task { try await engine.send(app: app, reference: "story", tokens: devices, payload: payload) }
                // As soon as the first phone has it, a moderator retracts it.
                while apns.inbox(devices[0]).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
                let (retraction, _) = try await engine.startRetraction(app: app, target: .references(["story"]), requestedBy: "moderator")
                let report = try await sending.value
                #expect(report.spared > 0)
                #expect(report.accepted + report.spared == devices.count)
                #expect(report.recorded == report.accepted)
                // The spared were never sent it, nor recorded; the others are retracted.
                let spared = devices.filter { apns.inbox($0).isEmpty }
                #expect(spared.count == report.spared)
                #expect(try await engine.store.countDevices(appID: app.id, references: ["story"]) == report.accepted)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                for device in devices where !spared.contains(device) {
                    let screen = await APNsSimulatedDevice.replay(apns.inbox(device))
                    #expect(screen.showing.isEmpty)
                }
            }
        }
    }
}
