import APNsSimulator
import FCMSimulator
import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Delivery modes over the API: an app's default mode and text, the collapse
/// ids deliveries carry, a retraction's mode and badge, and what phones show.
@Suite("API delivery modes")
struct DeliveryModeEndpointTests {
    /// A chat message deleted before the backend's push job ran: the send sends it to no one.
    @Test func aNotificationRetractedBeforeItIsSentIsSparedEveryDevice() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<4)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"chat","reference":"m1","tokens":\#(APIStage.hex(Array(devices.prefix(1))))}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let made = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["m1"]}"#)
            #expect(made.status == 202, "\(made)")
            let sent = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body: #"{"app":"chat","reference":"m1","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":"hi"}}}"#)
            #expect(sent.status == 200, "\(sent)")
            #expect(sent.json?["spared"] as? Int == 4)
            #expect(sent.json?["accepted"] as? Int == 0)
            #expect(sent.json?["recorded"] as? Int == 0)
            // The earlier device gets its removal push, and no one gets the original.
            _ = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            for device in devices { #expect(stage.apns.inbox(device).allSatisfy { $0.pushType == "background" }) }
        }
    }

    /// A broadcast fanned out as one request per 200 devices, retracted after
    /// its first phone has it: the requests after the retraction are spared
    /// whole, and every device sent the notification gets the removal.
    @Test func aRetractionDuringAFanOutSparesTheRequestsAfterIt() async throws {
        var faults = APNsSimulatorFaults()
        faults.latency = .milliseconds(100)
        try await APIStage.with(faults: faults) { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<1000)
            let fanOut = Task {
                var answers: [HTTPAnswer] = []
                for start in stride(from: 0, to: devices.count, by: 200) {
                    answers.append(
                        try await stage.call(
                            "POST", "/v1/notifications", key: key,
                            body:
                                #"{"app":"chat","reference":"oops","tokens":\#(APIStage.hex(Array(devices[start..<start + 200]))),"payload":{"aps":{"alert":"Wrong"}}}"#
                        ))
                }
                return answers
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while stage.apns.simulator.statistics.accepted == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let made = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["oops"]}"#)
            #expect(made.status == 202, "\(made)")
            let answers = try await fanOut.value
            #expect(answers.allSatisfy { $0.status == 200 }, "\(answers)")
            let accepted = answers.map { $0.json?["accepted"] as? Int ?? -1 }
            let spared = answers.map { $0.json?["spared"] as? Int ?? -1 }
            // Each request was sent whole or spared whole; the last ones were spared.
            #expect(zip(accepted, spared).allSatisfy { [$0, $1].sorted() == [0, 200] }, "\(accepted) \(spared)")
            #expect(spared.last == 200 && accepted.first == 200)

            let status = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            // A device whose original was accepted after its removal got a late retraction, made before the
            // request answered (docs/engine.md): what the phones show is settled once those are done too.
            let settled = ContinuousClock.now + .seconds(30)
            while try await stage.count("SELECT count(*) FROM retractions WHERE state IN ('queued', 'sending')") > 0,
                ContinuousClock.now < settled
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            let reached = devices.filter { stage.apns.inbox($0).contains { $0.pushType == "alert" } }
            #expect(reached.count == accepted.reduce(0, +))
            #expect(status["total"] as? Int == reached.count)
            #expect(status["sent"] as? Int == reached.count)
            for device in reached {
                let screen = await APNsSimulatedDevice.replay(stage.apns.inbox(device))
                #expect(
                    screen.showing.isEmpty,
                    "\(stage.apns.inbox(device).map { "\($0.pushType ?? "") \($0.receivedAt.timeIntervalSince1970)" })")
            }
            for device in devices[reached.count...] { #expect(stage.apns.inbox(device).isEmpty) }
        }
    }

    @Test func aModeratorReplacesAMessageOnPhonesThatRunNoRetractKit() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let app = try await Self.register(
                "news", #""retractionMode":"replace","retractionText":"Removed by the editors""#, admin: admin, on: stage)
            #expect(app.status == 201, "\(app)")
            #expect(app.json?["retractionMode"] as? String == "replace")
            #expect(app.json?["retractionText"] as? String == "Removed by the editors")
            let news = try #require(try await stage.store.app(named: "news"))
            let key = try await stage.key([.record, .send, .retract, .read], apps: [news], name: "newsroom")

            let devices = TestTokens.tokens(0..<3)
            let sent = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body:
                    #"{"app":"news","reference":"story-1","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":{"body":"Breaking"}}}}"#
            )
            #expect(sent.status == 200, "\(sent)")
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"news","reference":"story-2","tokens":\#(APIStage.hex(devices)),"collapseId":"slot-2"}"#)
            #expect(recorded.status == 201, "\(recorded)")

            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"news","references":["story-1","story-2"],"badge":0}"#)
            #expect(made.status == 202, "\(made)")
            #expect(made.json?["mode"] as? String == "replace")
            let id = try #require(made.json?["id"] as? String)
            let status = try await stage.waitUntilDone(id, key: key)
            #expect(status["mode"] as? String == "replace")
            #expect(status["badge"] as? Int == 0)
            #expect(status["sent"] as? Int == 3)

            for device in devices {
                let inbox = stage.apns.inbox(device)
                // The original `send` sent, then one replacement per collapse id.
                try #require(inbox.count == 3)
                #expect(inbox.dropFirst().map(\.collapseID).sorted { ($0 ?? "") < ($1 ?? "") } == ["slot-2", "story-1"])
                // The original of story-2 as the phone got it from the caller's own server.
                let story2 = APNsReceivedPush(
                    apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": "slot-2"],
                    body: Data(#"{"aps":{"alert":{"body":"Rumour"}}}"#.utf8), receivedAt: Date())
                let screen = await APNsSimulatedDevice.replay(
                    [inbox[0], story2] + inbox.dropFirst(), on: .init(appState: .forceQuit))
                #expect(screen.texts == ["story-1": "Removed by the editors", "slot-2": "Removed by the editors"])
            }

            // A device the caller's fan-out reaches after the retraction: recorded, and retracted at once by the workers.
            let late = TestTokens.token(9)
            let lateRecord = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"news","reference":"story-2","tokens":["\#(late.hex)"],"collapseId":"slot-2"}"#)
            #expect(lateRecord.status == 201, "\(lateRecord)")
            let deadline = ContinuousClock.now + .seconds(20)
            while stage.apns.inbox(late).isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let inbox = stage.apns.inbox(late)
            try #require(inbox.count == 1)
            #expect(inbox[0].collapseID == "slot-2")
            #expect(inbox[0].pushType == "alert")
        }
    }

    /// Registers app `name` (topic com.example.`name`) against the stage's APNs simulator, with `fields` (JSON members) more.
    static func register(_ name: String, _ fields: String, admin: String, on stage: APIStage) async throws -> HTTPAnswer {
        try await stage.call(
            "POST", "/v1/apps", key: admin,
            body: #"""
                {"name":"\#(name)","topic":"com.example.\#(name)","environment":"sandbox","endpoint":"\#(stage.apns.endpoint)",
                 "keyID":"\#(SimulatedAPNs.keyID)","teamID":"\#(SimulatedAPNs.teamID)","keyPath":"\#(stage.apns.keyPath)",\#(fields)}
                """#)
    }

    typealias Phone = APNsSimulatedDevice.Phone

    /// A phone in each state the model has: the app in the background, force-quit with an extension without and with
    /// the filtering entitlement, over its background budget, in Low Power Mode with an extension.
    static let phones: [Phone] = [
        Phone(), Phone(appState: .forceQuit, serviceExtension: .unfiltered), Phone(appState: .forceQuit, serviceExtension: .filtering),
        Phone(backgroundBudget: 0), Phone(appState: .lowPower, serviceExtension: .unfiltered),
    ]

    /// What each of ``phones`` shows after message 1 of 1 and 2 is retracted in `mode`.
    static func expected(after mode: RetractionMode) -> [[String: String]] {
        let both = ["1": "See you at 8?", "2": "See you at 8?"]
        let replaced = ["1": "This message was deleted", "2": "See you at 8?"]
        let gone = ["2": "See you at 8?"]
        switch mode {
        // Only an app iOS hands the push to removes it.
        case .background: return [gone, both, both, both, both]
        // The carrier in the original's place; an extension with the entitlement hides it too.
        case .serviceExtension: return [replaced, replaced, gone, replaced, replaced]
        case .replace: return Array(repeating: replaced, count: phones.count)
        }
    }

    /// Each mode over the API, in both dialects, to iPhones reached through APNs and through FCM, on a phone in every
    /// state the model has: what each shows at the end.
    @Test(arguments: RetractionMode.allCases, [PayloadDialect.canonical, .legacy])
    func eachModeReachesThePhonesItCanInBothDialectsThroughAPNsAndFCM(mode: RetractionMode, dialect: PayloadDialect) async throws {
        try await SimulatedFCM.with { fcm in
            try await APIStage.with(fcm: fcm) { stage in
                let admin = try await stage.key([.admin], apps: [], name: "ops")
                let registered = try await Self.register(
                    "mixed", #""fcmServiceAccountPath":"\#(fcm.serviceAccountPath)","dialect":"\#(dialect.rawValue)""#, admin: admin,
                    on: stage)
                #expect(registered.status == 201, "\(registered)")
                let app = try #require(try await stage.store.app(named: "mixed"))
                let key = try await stage.key([.send, .retract, .read], apps: [app])
                let iPhones = TestTokens.tokens(0..<Self.phones.count)
                let throughFCM = SimulatedFCM.tokens(0..<Self.phones.count)
                let fcmTokens = "[" + throughFCM.map { "\"\(PushService.fcm.text(of: $0))\"" }.joined(separator: ",") + "]"
                for reference in ["1", "2"] {
                    for (tokens, transport) in [(APIStage.hex(iPhones), "apns"), (fcmTokens, "fcm")] {
                        let sent = try await stage.call(
                            "POST", "/v1/notifications", key: key,
                            body:
                                #"{"app":"mixed","reference":"\#(reference)","transport":"\#(transport)","tokens":\#(tokens),"payload":{"aps":{"alert":{"body":"See you at 8?"},"mutable-content":1}}}"#
                        )
                        try #require(sent.status == 200, "\(sent)")
                    }
                }
                let made = try await stage.call(
                    "POST", "/v1/retractions", key: key, body: #"{"app":"mixed","references":["1"],"mode":"\#(mode.rawValue)"}"#)
                #expect(made.status == 202, "\(made)")
                let status = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
                #expect(status["sent"] as? Int == 2 * Self.phones.count, "\(status)")
                #expect(status["mode"] as? String == mode.rawValue)

                let expected = Self.expected(after: mode)
                for (index, phone) in Self.phones.enumerated() {
                    let viaAPNs = await APNsSimulatedDevice.replay(stage.apns.inbox(iPhones[index]), on: phone)
                    #expect(viaAPNs.texts == expected[index], "APNs, phone \(index)")
                    let viaFCM = await APNsSimulatedDevice.replay(fcm.inbox(throughFCM[index]).map(\.asAPNsPush), on: phone)
                    #expect(viaFCM.texts == expected[index], "FCM, phone \(index)")
                }
            }
        }
    }

    /// A chat deletion in `service-extension` mode to phones in every state, extension or not: the carriers are passive,
    /// so no phone's screen lights for it (the originals did). With the app's carriers made `active`, the next deletion
    /// lights every phone that shows its carrier, and none whose extension hides it.
    @Test func aDeletionInServiceExtensionModeWakesNoPhone() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let registered = try await Self.register("talk", #""retractionMode":"service-extension""#, admin: admin, on: stage)
            #expect(registered.status == 201, "\(registered)")
            #expect(registered.json?["carrierInterruptionLevel"] as? String == "passive")
            let app = try #require(try await stage.store.app(named: "talk"))
            let key = try await stage.key([.send, .retract, .read], apps: [app])
            let phones = Self.phones + [Phone(serviceExtension: .unfiltered), Phone(serviceExtension: .filtering)]
            let devices = TestTokens.tokens(0..<phones.count)
            for reference in ["1", "2", "3"] {
                let sent = try await stage.call(
                    "POST", "/v1/notifications", key: key,
                    body:
                        #"{"app":"talk","reference":"\#(reference)","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":{"body":"See you at 8?"},"sound":"default","mutable-content":1}}}"#
                )
                try #require(sent.status == 200, "\(sent)")
            }
            /// The phones each retraction's pushes woke, and what the last one left showing.
            func retract(_ reference: String) async throws -> (woken: Int, screens: [APNsSimulatedDevice.Screen]) {
                let before = Set(devices.flatMap { stage.apns.inbox($0).map(\.apnsID) })
                let made = try await stage.call(
                    "POST", "/v1/retractions", key: key, body: #"{"app":"talk","references":["\#(reference)"]}"#)
                #expect(made.status == 202, "\(made)")
                let status = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
                #expect(status["sent"] as? Int == phones.count, "\(status)")
                var woken = 0
                var screens: [APNsSimulatedDevice.Screen] = []
                for (device, phone) in zip(devices, phones) {
                    let inbox = stage.apns.inbox(device)
                    let carriers = inbox.map(\.apnsID).filter { !before.contains($0) }
                    #expect(carriers.count == 1)
                    let screen = await APNsSimulatedDevice.replay(inbox, on: phone)
                    if screen.wasWoken(byAnyOf: carriers) { woken += 1 }
                    screens.append(screen)
                }
                return (woken, screens)
            }
            let quiet = try await retract("1")
            #expect(quiet.woken == 0)
            // Each phone still woke for its three originals: the model does light screens.
            #expect(quiet.screens.allSatisfy { $0.woken.count == 3 }, "\(quiet.screens.map(\.woken.count))")
            let carrier = try #require(stage.apns.inbox(devices[0]).last)
            let aps = try #require(carrier.userInfo["aps"] as? [String: Any])
            #expect(aps["interruption-level"] as? String == "passive")
            #expect((aps["relevance-score"] as? NSNumber)?.intValue == 0)
            #expect(aps["sound"] == nil)

            let changed = try await stage.call("PATCH", "/v1/apps/talk", key: admin, body: #"{"carrierInterruptionLevel":"active"}"#)
            #expect(changed.status == 200, "\(changed)")
            #expect(changed.json?["carrierInterruptionLevel"] as? String == "active")
            let loud = try await retract("2")
            // Every phone shows its carrier but the two whose extension hides it.
            #expect(loud.woken == phones.count - 2)
            let refused = try await stage.call("PATCH", "/v1/apps/talk", key: admin, body: #"{"carrierInterruptionLevel":"silent"}"#)
            #expect(refused.status == 422)
            #expect(refused.json?["field"] as? String == "carrierInterruptionLevel")
        }
    }

    /// A retraction text no push could carry is refused when the app is registered, and nothing is registered.
    @Test func aRetractionTextOverTheLimitIsRefused() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let text = String(repeating: "x", count: 1025)
            let refused = try await Self.register(
                "news", #""retractionMode":"replace","retractionText":"\#(text)""#, admin: admin, on: stage)
            #expect(refused.status == 422, "\(refused)")
            #expect(refused.json?["field"] as? String == "retractionText")
            #expect((refused.json?["detail"] as? String)?.contains("1025 bytes") == true, "\(refused)")
            #expect(try await stage.store.app(named: "news") == nil)
        }
    }
}
