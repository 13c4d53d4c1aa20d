import APNsSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// `PATCH /v1/apps/{name}` and a retraction's own `text`: a change takes
/// effect for the next retraction, is audited field by field, and a bad value
/// is refused naming its field with nothing changed.
@Suite("Changing an app")
struct AppUpdateEndpointTests {
    /// Registers app `news` through the API (background mode, the simulator's key); an all-apps admin key and a key for news.
    static func news(_ stage: APIStage) async throws -> (admin: String, key: String, app: App) {
        let admin = try await stage.key([.admin], apps: [], name: "ops")
        let registered = try await stage.call(
            "POST", "/v1/apps", key: admin,
            body: #"""
                {"name":"news","topic":"com.example.news","environment":"sandbox","endpoint":"\#(stage.apns.endpoint)",
                 "keyID":"\#(SimulatedAPNs.keyID)","teamID":"\#(SimulatedAPNs.teamID)","keyPath":"\#(stage.apns.keyPath)"}
                """#)
        #expect(registered.status == 201, "\(registered)")
        let app = try #require(try await stage.store.app(named: "news"))
        return (admin, try await stage.key([.record, .send, .retract, .read], apps: [app], name: "newsroom"), app)
    }

    /// Sends `reference` to `devices` through the API and retracts it with `body`'s extra fields; the retraction's status at its end.
    static func sendThenRetract(
        _ reference: String, to devices: [DeviceToken], extra: String = "", stage: APIStage, key: String
    ) async throws -> [String: Any] {
        let sent = try await stage.call(
            "POST", "/v1/notifications", key: key,
            body:
                #"{"app":"news","reference":"\#(reference)","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":{"body":"Sale: 90% off"}}}}"#
        )
        try #require(sent.status == 200, "\(sent)")
        let made = try await stage.call(
            "POST", "/v1/retractions", key: key, body: #"{"app":"news","references":["\#(reference)"]\#(extra)}"#)
        try #require(made.status == 202, "\(made)")
        return try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
    }

    /// What each device shows, force-quit, after everything it was sent.
    static func screens(_ devices: [DeviceToken], _ stage: APIStage) async -> [[String: String]] {
        var screens: [[String: String]] = []
        for device in devices {
            screens.append(await APNsSimulatedDevice.replay(stage.apns.inbox(device), on: .init(appState: .forceQuit)).texts)
        }
        return screens
    }

    @Test func aChangeTakesEffectForTheNextRetractionAndIsAuditedFieldByField() async throws {
        try await APIStage.with { stage in
            let (admin, key, _) = try await Self.news(stage)
            let devices = TestTokens.tokens(0..<3)

            // Before: background, which a force-quit app never hears: the original stays.
            let before = try await Self.sendThenRetract("promo-1", to: devices, stage: stage, key: key)
            #expect(before["mode"] as? String == "background" && before["sent"] as? Int == 3, "\(before)")
            #expect(await Self.screens(devices, stage).allSatisfy { $0 == ["promo-1": "Sale: 90% off"] })

            let patched = try await stage.call(
                "PATCH", "/v1/apps/news", key: admin, body: #"{"retractionMode":"replace","retractionText":"This offer was withdrawn"}"#)
            #expect(patched.status == 200, "\(patched)")
            #expect(patched.json?["retractionMode"] as? String == "replace")
            #expect(patched.json?["retractionText"] as? String == "This offer was withdrawn")
            let audit = try await stage.call("GET", "/v1/audit?app=news&action=app.updated", key: admin)
            let entries = try #require(audit.json?["entries"] as? [[String: Any]])
            let changes = entries.compactMap { $0["details"] as? [String: String] }.sorted { ($0["field"] ?? "") < ($1["field"] ?? "") }
            #expect(
                changes == [
                    ["field": "retractionMode", "from": "background", "to": "replace"],
                    ["field": "retractionText", "from": RetractionMode.defaultText, "to": "This offer was withdrawn"],
                ], "\(changes)")
            #expect(entries.allSatisfy { ($0["actor"] as? String)?.contains("ops") == true }, "\(entries)")

            // The next retraction, made without a mode, is the app's new one with its new text, on the same server.
            let next = try await Self.sendThenRetract("promo-2", to: devices, stage: stage, key: key)
            #expect(next["mode"] as? String == "replace" && next["sent"] as? Int == 3, "\(next)")
            // One of its own: its text instead of the app's.
            let own = try await Self.sendThenRetract(
                "promo-3", to: devices, extra: #","text":"Removed: the price was wrong""#, stage: stage, key: key)
            #expect(own["text"] as? String == "Removed: the price was wrong" && own["sent"] as? Int == 3, "\(own)")
            for screen in await Self.screens(devices, stage) {
                #expect(
                    screen == [
                        "promo-1": "Sale: 90% off", "promo-2": "This offer was withdrawn", "promo-3": "Removed: the price was wrong",
                    ], "\(screen)")
            }

            // A device reached after the retraction gets its text too.
            let late = TestTokens.token(9)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"news","reference":"promo-3","tokens":["\#(late.hex)"],"collapseId":"promo-3"}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let deadline = ContinuousClock.now + .seconds(20)
            while stage.apns.inbox(late).isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let original = APNsReceivedPush(
                apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": "promo-3"],
                body: Data(#"{"aps":{"alert":{"body":"Sale: 90% off"}}}"#.utf8), receivedAt: Date())
            let lateScreen = await APNsSimulatedDevice.replay([original] + stage.apns.inbox(late), on: .init(appState: .forceQuit))
            #expect(lateScreen.texts == ["promo-3": "Removed: the price was wrong"], "\(lateScreen.texts)")

            // A text with background, which shows nothing, or an empty one: refused, naming `text`.
            for body in [#""mode":"background","text":"x""#, #""text":"""#] {
                let refused = try await stage.call(
                    "POST", "/v1/retractions", key: key, body: #"{"app":"news","references":["promo-3"],\#(body)}"#)
                #expect(refused.status == 422 && refused.json?["field"] as? String == "text", "\(refused)")
            }
        }
    }

    @Test func aBadValueIsRefusedNamingItsFieldAndNothingChanges() async throws {
        try await APIStage.with { stage in
            let (admin, key, original) = try await Self.news(stage)
            let cases: [(body: String, status: Int, field: String)] = [
                (#"{"retractionMode":"loud"}"#, 422, "retractionMode"),
                (#"{"retractionMode":"replace","retractionText":""}"#, 422, "retractionText"),
                (#"{"retractionText":"\#(String(repeating: "x", count: 1025))"}"#, 422, "retractionText"),
                (#"{"endpoint":"http://127.0.0.1:1"}"#, 422, "endpoint"),
                (#"{"endpoint":"https://push.evil.example"}"#, 422, "endpoint"),
                (#"{"topic":"com.example.other"}"#, 422, "topic"),
                (#"{"retractionMode":"replace","colour":"red"}"#, 422, "colour"),
                (#"{}"#, 422, "body"),
                (#"{"keyID":"short"}"#, 422, "keyID"),
                (#"{"certificatePath":"app.p12","keyPath":"key.p8"}"#, 422, "keyPath"),
                (#"{"keyPath":"/etc/passwd"}"#, 422, "keyPath"),
                (#"{"keyPath":"no-such-key.p8"}"#, 422, "keyPath"),
                (#"{"retractionMode":5}"#, 400, "retractionMode"),
            ]
            for (body, status, field) in cases {
                let refused = try await stage.call("PATCH", "/v1/apps/news", key: admin, body: body)
                #expect(refused.status == status && refused.json?["field"] as? String == field, "\(body): \(refused)")
            }
            #expect(try await stage.store.app(id: original.id) == original)
            #expect(try await stage.count("SELECT count(*) FROM audit_log WHERE action = 'app.updated'") == 0)

            // Who may: an admin key that may touch the app; others are refused or told there is no such app.
            let otherAdmin = try await stage.key([.admin], apps: [stage.chat], name: "chat-ops")
            let forbidden = try await stage.call("PATCH", "/v1/apps/news", key: key, body: #"{"retractionMode":"replace"}"#)
            #expect(forbidden.status == 403, "\(forbidden)")
            for (name, caller) in [("news", otherAdmin), ("nothing", admin)] {
                let missing = try await stage.call("PATCH", "/v1/apps/\(name)", key: caller, body: #"{"retractionMode":"replace"}"#)
                #expect(missing.status == 404 && missing.json?["field"] as? String == "name", "\(missing)")
            }

            // A change made from what the app no longer is: refused, the other change kept.
            let first = try await stage.server.engine.updateApp(original, change: AppChange(retractionText: "First"), actor: "test")
            #expect(first.retractionText == "First")
            await #expect(throws: RetractError.self) {
                _ = try await stage.server.engine.updateApp(original, change: AppChange(retractionMode: .replace), actor: "test")
            }
            #expect(try await stage.store.app(id: original.id) == first)
        }
    }

    @Test func aRotatedKeyIsReadCheckedAndUsedForTheNextRetraction() async throws {
        try await APIStage.with { stage in
            let (admin, key, _) = try await Self.news(stage)
            let folder = FileManager.default.temporaryDirectory
            let rotated = folder.appendingPathComponent("news-rotated-\(UUID().uuidString).p8")
            try FileManager.default.copyItem(at: URL(fileURLWithPath: stage.apns.keyPath), to: rotated)
            defer { try? FileManager.default.removeItem(at: rotated) }
            let unusable = folder.appendingPathComponent("news-unusable-\(UUID().uuidString).p8")
            try Data("not a key".utf8).write(to: unusable)
            defer { try? FileManager.default.removeItem(at: unusable) }

            let refused = try await stage.call("PATCH", "/v1/apps/news", key: admin, body: #"{"keyPath":"\#(unusable.lastPathComponent)"}"#)
            #expect(refused.status == 422 && refused.json?["type"] as? String == APIProblem.Kind.appCredentials.type, "\(refused)")

            let changed = try await stage.call("PATCH", "/v1/apps/news", key: admin, body: #"{"keyPath":"\#(rotated.lastPathComponent)"}"#)
            #expect(changed.status == 200 && changed.json?["keyPath"] as? String == rotated.path, "\(changed)")
            let audit = try await stage.call("GET", "/v1/audit?app=news&action=app.updated", key: admin)
            let details = (audit.json?["entries"] as? [[String: Any]])?.compactMap { $0["details"] as? [String: String] }
            #expect(details == [["field": "keyPath", "from": stage.apns.keyPath, "to": rotated.path]], "\(details ?? [])")
            let devices = TestTokens.tokens(0..<2)
            let status = try await Self.sendThenRetract("story-1", to: devices, stage: stage, key: key)
            #expect(status["sent"] as? Int == 2, "\(status)")
        }
    }
}
