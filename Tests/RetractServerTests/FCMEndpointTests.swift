import FCMSimulator
import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// FCM devices through the HTTP API: registering, recording, sending, retracting and the device feed.
@Suite("API with FCM")
struct FCMEndpointTests {
    @Test func anFCMAppRecordsSendsAndRetractsOverHTTP() async throws {
        try await SimulatedFCM.with { fcm in
            try await APIStage.with(fcm: fcm) { stage in
                let registered = try await Self.registerDroid(on: stage, fcm: fcm)
                #expect(registered.status == 201, "\(registered)")
                #expect(registered.json?["auth"] as? String == "none")
                #expect(registered.json?["fcmServiceAccountPath"] as? String == fcm.serviceAccountPath)
                let app = try #require(try await stage.store.app(named: "droid"))
                let key = try await stage.key([.record, .send, .retract, .read, .client], apps: [app])

                let devices = SimulatedFCM.tokens(0..<3).map { PushService.fcm.text(of: $0) }
                // Characters no FCM token has, which could not name the device in a feed URL, are refused.
                for bad in ["a b", "a/b", "a?b", "a%2Fb"] {
                    let refused = try await stage.call(
                        "POST", "/v1/deliveries", key: key, body: #"{"app":"droid","reference":"r","transport":"fcm","tokens":["\#(bad)"]}"#
                    )
                    #expect(refused.status == 422, "\(bad)")
                    #expect(refused.json?["field"] as? String == "tokens[0]")
                }
                let tokens = "[" + devices.map { "\"\($0)\"" }.joined(separator: ",") + "]"
                let recorded = try await stage.call(
                    "POST", "/v1/deliveries", key: key, body: #"{"app":"droid","reference":"msg-1","transport":"fcm","tokens":\#(tokens)}"#)
                #expect(recorded.status == 201, "\(recorded)")
                let sent = try await stage.call(
                    "POST", "/v1/notifications", key: key,
                    body:
                        #"{"app":"droid","reference":"msg-2","transport":"fcm","tokens":[\#(tokens.dropFirst().dropLast())],"payload":{"aps":{"alert":"hi"}}}"#
                )
                #expect(sent.status == 200, "\(sent)")
                #expect(sent.json?["accepted"] as? Int == 3)

                let made = try await stage.call(
                    "POST", "/v1/retractions", key: key, body: #"{"app":"droid","references":["msg-1","msg-2"]}"#)
                #expect(made.status == 202, "\(made)")
                let done = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
                #expect(done["sent"] as? Int == 3)
                for device in devices {
                    let inbox = fcm.simulator.inbox(for: device)
                    // The original, then one removal push for both references.
                    try #require(inbox.count == 2)
                    #expect(RetractPayload.retraction(in: inbox[1].userInfo) == ["msg-1", "msg-2"])
                }

                // The device feed finds a device by its FCM token, through RetractKit's client.
                let feed = try await stage.call("GET", "/v1/devices/\(devices[0])/retractions?app=droid&transport=fcm", key: key)
                #expect(feed.status == 200, "\(feed)")
                let center = InMemoryNotificationCenter(delivered: [
                    DeliveredNotification(identifier: "m1", referenceID: "msg-1"), DeliveredNotification(identifier: "msg-2"),
                    DeliveredNotification(identifier: "other", referenceID: "msg-3"),
                ])
                let client = RetractionFeed(baseURL: stage.http.baseURL, apiKey: key, app: "droid")
                let caughtUp = try await client.catchUp(fcmToken: devices[0], since: nil, handler: RetractionHandler(center: center))
                #expect(caughtUp.outcome == .removed(["m1", "msg-2"]))
                #expect(center.delivered.map(\.identifier) == ["other"])
                // The same token read as hex is no token at all.
                let asHex = try await stage.call("GET", "/v1/devices/\(devices[0])/retractions?app=droid", key: key)
                #expect(asHex.status == 422)
            }
        }
    }

    /// Both ways an Android phone shows an original sent through the API,
    /// and one retraction of both: the phones' screens worked out by
    /// RetractKit for Android (the Java library, run as a process) on what
    /// FCM handed each phone in its state.
    @Test func aDataOnlyAndroidOriginalAndAFirebaseShownOneAreBothRemovedByARetraction() async throws {
        let classes = try AndroidReplay.classes(root: Self.packageRoot)
        try await Self.withDroid { stage, fcm, key, devices in
            let tokens = devices.map { "\"\($0)\"" }.joined(separator: ",")
            func send(_ reference: String, _ extra: String) async throws {
                try await Self.send(reference, body: reference, extra, devices: devices, key: key, stage: stage)
            }
            try await send("msg-a", #","androidDisplay":"app","thread":"c-1""#)
            try await send("msg-b", "")
            try await send("msg-c", #","androidDisplay":"firebase""#)
            let refused = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body:
                    #"{"app":"droid","reference":"x","transport":"fcm","tokens":[\#(tokens)],"payload":{"aps":{"alert":"x"}},"androidDisplay":"tray"}"#
            )
            #expect(refused.status == 422)
            #expect(refused.json?["field"] as? String == "androidDisplay")
            #expect((refused.json?["detail"] as? String)?.contains("firebase (Firebase shows it) or app") == true, "\(refused)")

            let forceStopped = Date()
            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"droid","references":["msg-a","msg-b"]}"#)
            #expect(made.status == 202, "\(made)")
            let done = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            #expect(done["sent"] as? Int == 3)

            // Phone 0 and 1 have the app in the background (1 dozing: the retraction is high priority);
            // phone 2's user force-stopped the app before the retraction, so FCM delivered it nothing.
            let phones = [AndroidPhone(), AndroidPhone(dozing: true), AndroidPhone(forceStoppedSince: forceStopped)]
            let deliveries = zip(devices, phones).map { device, phone in (device, phone.delivery(of: fcm.simulator.inbox(for: device)))
            }
            let before = deliveries[2].1.events
            // What the phones were handed: the data-only original to the app, the others shown by Firebase under their tags.
            #expect(before.count == 3)
            #expect(before[1] == .display(tag: "msg-b", title: "Ada", body: "msg-b"))
            #expect(before[2] == .display(tag: "msg-c", title: "Ada", body: "msg-c"))
            guard case .data(let data) = before[0] else {
                Issue.record("msg-a reached the phone as \(before[0]), not as data for the app")
                return
            }
            #expect(data["title"] == "Ada")
            #expect(data["body"] == "msg-a")

            let screens = try AndroidReplay.screens(of: deliveries.map { ($0.0, $0.1.events) }, classes: classes)
            #expect(screens[devices[0]]?.map(\.name) == ["msg-c"])
            #expect(screens[devices[1]]?.map(\.name) == ["msg-c"])
            #expect(screens[devices[2]]?.map(\.name) == ["msg-a", "msg-b", "msg-c"])
            #expect(deliveries[2].1.undelivered == 1)
        }
    }

    /// Edits of an original the app showed and of one Firebase showed, on
    /// Android phones awake, dozing and force-stopped: RetractKit for Android
    /// re-shows the first with its new words (background), Firebase shows the
    /// second's in its place by its tag (replace); a force-stopped app is
    /// delivered neither, and keeps the old words.
    @Test func editsReachAndroidPhonesAsEachModeCan() async throws {
        let classes = try AndroidReplay.classes(root: Self.packageRoot)
        try await Self.withDroid { stage, fcm, key, devices in
            for (reference, display) in [("msg-a", "app"), ("msg-c", "firebase")] {
                try await Self.send(reference, body: "old", #","androidDisplay":"\#(display)""#, devices: devices, key: key, stage: stage)
            }
            let forceStopped = Date()
            for (reference, mode) in [("msg-a", "background"), ("msg-c", "replace")] {
                let made = try await stage.call(
                    "POST", "/v1/edits", key: key,
                    body: #"{"app":"droid","reference":"\#(reference)","title":"Ada","body":"new \#(reference)","mode":"\#(mode)"}"#)
                #expect(made.status == 202, "\(made)")
                let done = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
                #expect(done["sent"] as? Int == 3)
            }
            let phones = [AndroidPhone(), AndroidPhone(dozing: true), AndroidPhone(forceStoppedSince: forceStopped)]
            let deliveries = zip(devices, phones).map { device, phone in
                (device, phone.delivery(of: fcm.simulator.inbox(for: device)).events)
            }
            let screens = try AndroidReplay.screens(of: deliveries, classes: classes)
            for device in devices.prefix(2) {
                let shown = screens[device] ?? []
                #expect(shown.map(\.name).sorted() == ["msg-a", "msg-c"], "\(shown)")
                #expect(shown.allSatisfy { $0.text == "new \($0.name)" && $0.title == "Ada" }, "\(shown)")
            }
            let stopped = screens[devices[2]] ?? []
            #expect(stopped.map(\.name).sorted() == ["msg-a", "msg-c"] && stopped.allSatisfy { $0.text == "old" }, "\(stopped)")
        }
    }

    /// A chat app that shows one notification per conversation (RetractKit for
    /// Android's `Conversations`): three messages of one conversation sent
    /// through the API as app-shown data messages show as one notification of
    /// three messages; deleting the middle one leaves the other two, without a
    /// new alert; an edit changes one line, silently; deleting the
    /// conversation clears it. Each step's screens are worked out by the Java
    /// library run as a process, on what FCM handed each phone.
    @Test func anAndroidConversationLosesExactlyTheRetractedMessageSilently() async throws {
        let classes = try AndroidReplay.classes(root: Self.packageRoot)
        try await Self.withDroid { stage, fcm, key, devices in
            for (reference, words) in [("m1", "Are we on?"), ("m2", "Wrong chat, sorry"), ("m3", "Yes, at 9")] {
                try await Self.send(
                    reference, body: words, #","androidDisplay":"app","thread":"c-1""#, devices: devices, key: key, stage: stage)
            }
            let awake = AndroidPhone()
            func screens() throws -> [String: AndroidReplay.Screen] {
                try AndroidReplay.phoneScreens(
                    of: devices.map { ($0, awake.delivery(of: fcm.simulator.inbox(for: $0)).events) }, style: .conversation,
                    classes: classes)
            }
            func step(_ path: String, _ body: String) async throws {
                let made = try await stage.call("POST", path, key: key, body: body)
                #expect(made.status == 202, "\(made)")
                let done = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
                #expect(done["sent"] as? Int == devices.count, "\(done)")
            }
            func messages(_ screen: AndroidReplay.Screen?) -> [String] {
                (screen?.showing.first?.messages ?? []).map { "\($0.reference): \($0.text)" }
            }
            let before = try screens()
            for device in devices {
                #expect(before[device]?.showing.map(\.name) == ["conversation:c-1"])
                #expect(messages(before[device]) == ["m1: Are we on?", "m2: Wrong chat, sorry", "m3: Yes, at 9"])
                #expect(before[device]?.alerts == 3)
            }

            try await step("/v1/retractions", #"{"app":"droid","references":["m2"]}"#)
            let deleted = try screens()
            for device in devices {
                #expect(deleted[device]?.showing.map(\.name) == ["conversation:c-1"])
                #expect(messages(deleted[device]) == ["m1: Are we on?", "m3: Yes, at 9"])
                #expect(deleted[device]?.alerts == 3, "the conversation was re-posted silently")
            }

            try await step("/v1/edits", #"{"app":"droid","reference":"m1","body":"Are we on at 9?"}"#)
            let edited = try screens()
            for device in devices {
                #expect(messages(edited[device]) == ["m1: Are we on at 9?", "m3: Yes, at 9"])
                #expect(edited[device]?.alerts == 3)
            }

            try await step("/v1/retractions", #"{"app":"droid","thread":"c-1"}"#)
            let cleared = try screens()
            for device in devices { #expect(cleared[device]?.showing.isEmpty == true, "\(String(describing: cleared[device]))") }
        }
    }

    /// `droid` registered on a stage with the FCM simulator, a key that
    /// sends, retracts and reads it, and three of its devices' FCM tokens.
    static func withDroid(_ body: (APIStage, SimulatedFCM, _ key: String, _ devices: [String]) async throws -> Void) async throws {
        try await SimulatedFCM.with { fcm in
            try await APIStage.with(fcm: fcm) { stage in
                let registered = try await Self.registerDroid(on: stage, fcm: fcm)
                #expect(registered.status == 201, "\(registered)")
                let app = try #require(try await stage.store.app(named: "droid"))
                let key = try await stage.key([.send, .retract, .read], apps: [app])
                try await body(stage, fcm, key, SimulatedFCM.tokens(0..<3).map { PushService.fcm.text(of: $0) })
            }
        }
    }

    /// `POST /v1/notifications` of `reference` to `devices` through FCM, titled Ada, with `extra` fields.
    static func send(
        _ reference: String, body: String, _ extra: String, devices: [String], key: String, stage: APIStage
    ) async throws {
        let tokens = devices.map { "\"\($0)\"" }.joined(separator: ",")
        let sent = try await stage.call(
            "POST", "/v1/notifications", key: key,
            body:
                #"{"app":"droid","reference":"\#(reference)","transport":"fcm","tokens":[\#(tokens)],"payload":{"aps":{"alert":{"title":"Ada","body":"\#(body)"}}}\#(extra)}"#
        )
        #expect(sent.status == 200, "\(sent)")
    }

    /// Registers `droid`, an app reached through the FCM simulator only, as an admin would.
    static func registerDroid(on stage: APIStage, fcm: SimulatedFCM) async throws -> HTTPAnswer {
        let admin = try await stage.key([.admin], apps: [])
        return try await stage.call(
            "POST", "/v1/apps", key: admin,
            body:
                #"{"name":"droid","topic":"com.example.droid","environment":"production","fcmServiceAccountPath":"\#(fcm.serviceAccountPath)"}"#
        )
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func fcmInputThatCannotBeUsedIsNamedAndWritesNothing() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [])
            let missing = try await stage.call(
                "POST", "/v1/apps", key: admin,
                body:
                    #"{"name":"droid","topic":"com.example.droid","environment":"production","fcmServiceAccountPath":"/nonexistent/sa.json"}"#
            )
            #expect(missing.status == 422)
            #expect(missing.json?["field"] as? String == "fcmServiceAccountPath")
            #expect((missing.json?["detail"] as? String)?.contains("the server's credentials folder") == true)
            // A file in the folder that is not a service account: named, with what is wrong.
            let notJSON = FileManager.default.temporaryDirectory.appendingPathComponent("retract-sa-\(UUID().uuidString).json")
            try Data("not json".utf8).write(to: notJSON)
            defer { try? FileManager.default.removeItem(at: notJSON) }
            let unreadable = try await stage.call(
                "POST", "/v1/apps", key: admin,
                body:
                    #"{"name":"droid","topic":"com.example.droid","environment":"production","fcmServiceAccountPath":"\#(notJSON.path)"}"#
            )
            #expect(unreadable.status == 422)
            #expect(unreadable.json?["field"] as? String == "fcmServiceAccountPath")
            #expect((unreadable.json?["detail"] as? String)?.contains("is not a JSON object") == true, "\(unreadable)")

            let key = try await stage.chatKey()
            let badTransport = try await stage.call(
                "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"r","transport":"gcm","tokens":["ab"]}"#)
            #expect(badTransport.status == 422)
            #expect(badTransport.json?["field"] as? String == "transport")
            // chat has no service account: its FCM devices could never be retracted.
            let noAccount = try await stage.call(
                "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"r","transport":"fcm","tokens":["abc:APA91b"]}"#)
            #expect(noAccount.status == 422)
            #expect(noAccount.problem == "app-credentials")
            #expect(noAccount.json?["field"] as? String == "transport")
            #expect((noAccount.json?["detail"] as? String)?.contains("has no FCM service account") == true)
            #expect(try await stage.count("SELECT count(*) FROM deliveries") == 0)
            #expect(try await stage.count("SELECT count(*) FROM apps WHERE name = 'droid'") == 0)
        }
    }
}
