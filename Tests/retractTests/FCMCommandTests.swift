import APNsSimulator
import FCMSimulator
import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// FCM through the `retract` binary, as a user runs it.
@Suite("retract with FCM")
struct FCMCommandTests {
    @Test("apps add --fcm-service-account, record --transport fcm and retract: every FCM device removes the notification")
    func retractThroughFCM() async throws {
        try await EndToEndTests.withStage { stage in
            try await SimulatedFCM.with { fcm in
                let fcmEnvironment: [String: String?] = ["FCM_ENDPOINT": fcm.endpoint, "FCM_CA_FILE": fcm.caPath]
                let added = try stage.retract(
                    ["apps", "add", "chat", "--topic", "com.example.chat", "--fcm-service-account", fcm.serviceAccountPath, "--json"])
                try #require(added.status == 0, "\(added.stderr)")
                #expect(added.stdout.contains(#""fcmServiceAccountPath" : "\#(fcm.serviceAccountPath)""#))
                let listed = try stage.retract(["apps", "list"])
                #expect(listed.stdout.contains("FCM service account at \(fcm.serviceAccountPath)"))

                let devices = SimulatedFCM.tokens(0..<4)
                let file = try stage.apns.file("fcm-tokens.txt", devices.map { PushService.fcm.text(of: $0) }.joined(separator: "\n"))
                let recorded = try stage.retract([
                    "record", "--app", "chat", "--reference", "msg-1", "--transport", "fcm", "--tokens-file", file,
                ])
                try #require(recorded.status == 0, "\(recorded.stderr)")
                fcm.simulator.unregister(PushService.fcm.text(of: devices[0]))

                let retracted = try stage.retract(["notification", "msg-1", "--app", "chat", "--json"], environment: fcmEnvironment)
                #expect(retracted.status == 0, "\(retracted.stderr)")
                let account = try EndToEndTests.account(retracted)
                #expect(account.state == "done" && account.total == 4 && account.sent == 3 && account.unregistered == 1)
                for device in devices.dropFirst() {
                    let inbox = fcm.inbox(device)
                    try #require(inbox.count == 1)
                    #expect(RetractPayload.retraction(in: inbox[0].userInfo) == ["msg-1"])
                }
                // Nothing went to APNs: the app has no APNs credentials.
                #expect(stage.apns.simulator.statistics.accepted == 0)
            }
        }
    }

    @Test("send --android-display: Firebase shows it under the reference, or the app gets it as data; a bad value is named")
    func sendForAndroid() async throws {
        try await EndToEndTests.withStage { stage in
            try await SimulatedFCM.with { fcm in
                let fcmEnvironment: [String: String?] = ["FCM_ENDPOINT": fcm.endpoint, "FCM_CA_FILE": fcm.caPath]
                let added = try stage.retract([
                    "apps", "add", "chat", "--topic", "com.example.chat", "--fcm-service-account", fcm.serviceAccountPath,
                ])
                try #require(added.status == 0, "\(added.stderr)")
                let device = PushService.fcm.text(of: SimulatedFCM.tokens(0..<1)[0])
                let file = try stage.apns.file("fcm-tokens.txt", device)
                let payload = try stage.apns.file("p.json", #"{"aps":{"alert":{"title":"Ada","body":"See you at 8?"}}}"#)
                func send(_ reference: String, _ extra: [String]) throws -> RetractCLI.Result {
                    try stage.retract(
                        [
                            "send", "--app", "chat", "--reference", reference, "--transport", "fcm", "--tokens-file", file, "--payload",
                            payload,
                        ]
                            + extra, environment: fcmEnvironment)
                }
                let shownByFirebase = try send("m1", ["--no-collapse-id"])
                #expect(shownByFirebase.status == 0, "\(shownByFirebase.stderr)")
                let shownByApp = try send("m2", ["--android-display", "app"])
                #expect(shownByApp.status == 0, "\(shownByApp.stderr)")
                let inbox = fcm.simulator.inbox(for: device)
                try #require(inbox.count == 2)
                // Without a collapse id Firebase still gets a tag: the reference, which RetractKit for Android looks for.
                #expect(inbox[0].androidNotification?["tag"] == "m1")
                #expect(inbox[1].androidNotification == nil)
                #expect(inbox[1].data["title"] == "Ada" && inbox[1].data["body"] == "See you at 8?")
                #expect(inbox[1].androidPriority == "HIGH")

                let bad = try send("m3", ["--android-display", "tray"])
                #expect(bad.status == 64)
                #expect(bad.stderr.contains("--android-display"), "\(bad.stderr)")
            }
        }
    }

    @Test("an app in the legacy dialect reached through FCM: a carrier for its extension, then a replacement")
    func deliveryModesThroughFCMInTheLegacyDialect() async throws {
        try await EndToEndTests.withStage { stage in
            try await SimulatedFCM.with { fcm in
                let fcmEnvironment: [String: String?] = ["FCM_ENDPOINT": fcm.endpoint, "FCM_CA_FILE": fcm.caPath]
                let added = try stage.retract([
                    "apps", "add", "chat", "--topic", "com.example.chat", "--fcm-service-account", fcm.serviceAccountPath,
                    "--dialect", "legacy", "--retraction-mode", "service-extension",
                ])
                try #require(added.status == 0, "\(added.stderr)")
                let devices = SimulatedFCM.tokens(0..<3)
                let file = try stage.apns.file("fcm-tokens.txt", devices.map { PushService.fcm.text(of: $0) }.joined(separator: "\n"))
                let payload = try stage.apns.file("p.json", #"{"aps":{"alert":{"title":"Ada","body":"See you at 8?"}}}"#)
                for reference in ["41", "42"] {
                    let sent = try stage.retract(
                        [
                            "send", "--app", "chat", "--reference", reference, "--transport", "fcm", "--tokens-file", file, "--payload",
                            payload,
                        ],
                        environment: fcmEnvironment)
                    try #require(sent.status == 0, "\(sent.stderr)")
                }

                let carried = try stage.retract(["notification", "41", "--app", "chat"], environment: fcmEnvironment)
                #expect(carried.status == 0, "\(carried.stderr)")
                let replaced = try stage.retract(["notification", "42", "--app", "chat", "--mode", "replace"], environment: fcmEnvironment)
                #expect(replaced.status == 0, "\(replaced.stderr)")
                for device in devices {
                    let inbox = fcm.inbox(device)
                    try #require(inbox.count == 4)
                    let (carrier, replacement) = (inbox[2], inbox[3])
                    // The article's keys with an integer id, in an alert for the extension; Android gets a data message.
                    #expect(carrier.data["notifcationCustomData"]?.contains(#""pushNotificationReferanceId":41"#) == true)
                    #expect(carrier.apnsHeaders["apns-collapse-id"] == "41")
                    #expect(carrier.androidNotification == nil)
                    // The replacement: Android's notification with the original's tag.
                    #expect(replacement.androidNotification == ["body": "This message was deleted", "tag": "42"])
                    #expect(RetractPayload.retraction(in: replacement.userInfo) == [42])
                    // An iPhone reached through FCM, force-quit, whose extension may hide notifications.
                    let screen = await APNsSimulatedDevice.replay(
                        inbox.map(\.asAPNsPush), on: .init(appState: .forceQuit, serviceExtension: .filtering))
                    #expect(screen.texts == ["42": "This message was deleted"])
                }
            }
        }
    }

    @Test("a service-account file or FCM token that cannot be used is named, with its exit code")
    func badInputs() async throws {
        try await EndToEndTests.withStage { stage in
            let notJSON = try stage.apns.file("sa.json", "not json")
            let badFile = try stage.retract(["apps", "add", "chat", "--topic", "com.example.chat", "--fcm-service-account", notJSON])
            #expect(badFile.status == 8)
            #expect(badFile.stderr.contains("sa.json is not a JSON object"))
            let missing = try stage.retract(
                [
                    "apps", "add", "chat", "--topic", "com.example.chat", "--fcm-service-account",
                    stage.apns.folder.appendingPathComponent("none.json").path,
                ])
            #expect(missing.status == 8)
            #expect(missing.stderr.contains("cannot be read"))

            try stage.addApp("chat")
            let badToken = try stage.retract(["record", "--app", "chat", "--reference", "x", "--transport", "fcm", "--token", "has space"])
            #expect(badToken.status == 2)
            #expect(badToken.stderr.contains("--token #1: \"has space\" is not an FCM registration token"))
            // The app registered with APNs credentials only cannot send through FCM, and says how to fix it.
            let fcmToken = PushService.fcm.text(of: SimulatedFCM.token(1))
            let noAccount = try stage.retract(
                [
                    "send", "--app", "chat", "--reference", "x", "--transport", "fcm", "--token", fcmToken, "--payload",
                    try stage.apns.file("p.json", #"{"aps":{"alert":"hi"}}"#),
                ])
            #expect(noAccount.status == 8)
            #expect(noAccount.stderr.contains("has no FCM service account (retract apps add --fcm-service-account FILE)"))
        }
    }

    @Test("the demo runs through FCM, and through APNs and FCM at once", arguments: ["fcm", "mixed"])
    func demo(transport: String) throws {
        let result = try RetractCLI.run(
            ["demo", "--transport", transport, "--devices", "200", "--uninstalled", "4"], environment: ["DATABASE_URL": nil])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("FCM      simulator on 127.0.0.1:"))
        #expect(result.stdout.contains("APNs     simulator") == (transport == "mixed"))
        #expect(result.stdout.contains("devices: 200 · sent 196 · unregistered 4 · failed 0"))
        #expect(result.stdout.contains("before the retraction: 200 of 200 devices showed"))
        // The Android phones' screens, from RetractKit for Android run as a process: the background ones
        // lose it in either mode; the force-stopped and Doze-held ones (every fifth by construction,
        // less those that uninstalled the app) keep it, and the report says why.
        let android = try Regex(
            #"Android phones: (\d+) of the (\d+) reachable removed it; (\d+) still show it \((\d+) force-stopped: FCM delivers nothing to them; (\d+) in Doze"#
        )
        let lines = result.stdout.matches(of: android).map { match in
            (1...5).map { Int(match.output[$0].substring ?? "") ?? -1 }
        }
        try #require(lines.count == 2, "\(result.stdout)")
        let androidPhones = transport == "mixed" ? 100 : 200
        for numbers in lines {
            let (removed, reachable, showing, stopped, dozing) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
            #expect(removed + showing == reachable)
            #expect(showing == stopped + dozing)
            #expect((androidPhones * 15 / 100 - 4...androidPhones * 15 / 100).contains(stopped), "\(numbers)")
            #expect((androidPhones * 5 / 100 - 4...androidPhones * 5 / 100).contains(dozing), "\(numbers)")
        }
        // Later, Doze lets the held retraction through and the force-stopped apps, opened, read the device feed
        // from the API: RetractKit for Android's feed reader against Retract's, and nothing is left.
        let later = try Regex(#"Android phones: (\d+) of the (\d+) that still showed it removed it; 0 still show it"#)
        let laterMatch = try #require(result.stdout.firstMatch(of: later), "\(result.stdout)")
        #expect(laterMatch.output[1].substring == laterMatch.output[2].substring)
        #expect(Int(laterMatch.output[2].substring ?? "") == lines.last?[2])
        // iPhones: force-quit and throttled phones keep it in background mode; the extension's carrier reaches every one.
        if transport == "mixed" {
            #expect(result.stdout.contains("after background mode:"))
            #expect(!result.stdout.contains("; 0 still show it (force-quit"))
            let iPhones = try Regex(
                #"after service-extension mode:\n     iPhones: +(\d+) of the (\d+) reachable removed it; 0 still show it"#)
            #expect(result.stdout.contains(iPhones), "\(result.stdout)")
        }
    }
}
