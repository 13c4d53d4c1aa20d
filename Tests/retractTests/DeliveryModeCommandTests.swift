import APNsSimulator
import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// Delivery modes from the command line: an app's default, a retraction's
/// choice, the collapse ids `record` keeps, and what each phone shows.
@Suite("retract delivery modes")
struct DeliveryModeCommandTests {
    typealias Stage = EndToEndTests.Stage

    @Test func anAppsDefaultModeAndAChosenModeReachForceQuitPhones() async throws {
        try await EndToEndTests.withStage { stage in
            let added = try stage.retract(
                stage.apps.appsAddArguments(name: "chat") + ["--retraction-mode", "service-extension", "--retraction-text", "Deleted"])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout.contains("retractions in service-extension mode"), "\(added.stdout)")
            let devices = TestTokens.tokens(0..<4)
            let file = try stage.apns.file("tokens.txt", devices.map(\.hex).joined(separator: "\n"))
            for reference in ["m1", "m2"] {
                let recorded = try stage.retract(
                    ["record", "--app", "chat", "--reference", reference, "--tokens-file", file, "--collapse-id", "c-\(reference)"])
                #expect(recorded.status == 0, "\(recorded.stderr)")
            }

            // The app's default: a carrier for its extension.
            let byDefault = try stage.retract(["notification", "m1", "--app", "chat", "--json"])
            #expect(byDefault.status == 0, "\(byDefault.stderr)")
            let account = try #require(try JSONSerialization.jsonObject(with: Data(byDefault.stdout.utf8)) as? [String: Any])
            #expect(account["mode"] as? String == "service-extension")
            // Chosen for one retraction: the original replaced in place, the badge set.
            let replaced = try stage.retract(["notification", "m2", "--app", "chat", "--mode", "replace", "--badge", "0"])
            #expect(replaced.status == 0, "\(replaced.stderr)")
            #expect(replaced.stdout.contains("(app chat, replace mode): done"), "\(replaced.stdout)")

            for device in devices {
                let inbox = stage.apns.inbox(device)
                try #require(inbox.count == 2)
                #expect(inbox.map(\.collapseID) == ["c-m1", "c-m2"])
                #expect(inbox.allSatisfy { $0.pushType == "alert" })
                // A force-quit phone whose extension may hide notifications: nothing of either is left;
                // the original of m1 and the replacement of m2 are what it received before and after.
                let originals = [m1, m2].map { original($0, on: device) }
                let screen = await APNsSimulatedDevice.replay(
                    originals + inbox, on: .init(appState: .forceQuit, serviceExtension: .filtering))
                #expect(screen.texts == ["c-m2": "Deleted"])
            }
        }
    }

    let m1 = "m1"
    let m2 = "m2"

    /// The original of `reference` as the phone received it before the retraction.
    func original(_ reference: String, on device: DeviceToken) -> APNsReceivedPush {
        APNsReceivedPush(
            apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": "c-\(reference)"],
            body: Data(
                #"{"aps":{"alert":{"body":"secret \#(reference)"}},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)"}}"#
                    .utf8),
            receivedAt: Date())
    }

    /// A delivery recorded after its retraction is retracted by `record` itself, in the same mode.
    @Test func aLateDeliveryIsRetractedByTheRecordCommand() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let early = TestTokens.tokens(0..<2)
            let late = TestTokens.token(2)
            try stage.record("m1", app: "chat", tokens: early)
            let retracted = try stage.retract(["notification", "m1", "--app", "chat", "--mode", "service-extension"])
            #expect(retracted.status == 0, "\(retracted.stderr)")

            let recorded = try stage.retract(["record", "--app", "chat", "--reference", "m1", "--token", late.hex])
            #expect(recorded.status == 0, "\(recorded.stderr)")
            #expect(recorded.stdout.contains("m1 was retracted already: retracting the new deliveries"), "\(recorded.stdout)")
            #expect(recorded.stdout.contains("(app chat, service-extension mode): done"), "\(recorded.stdout)")
            let inbox = stage.apns.inbox(late)
            try #require(inbox.count == 1)
            #expect(inbox[0].pushType == "alert")
            #expect(RetractPayload.retraction(in: inbox[0].userInfo) == ["m1"])
            for device in early { #expect(stage.apns.inbox(device).count == 1) }

            // With --no-wait it is queued for the workers and named.
            let queued = try stage.retract([
                "record", "--app", "chat", "--reference", "m1", "--token", TestTokens.token(3).hex, "--no-wait",
            ])
            #expect(queued.status == 0, "\(queued.stderr)")
            #expect(queued.stdout.contains("retracting the new deliveries (retraction "), "\(queued.stdout)")
            #expect(stage.apns.inbox(TestTokens.token(3)).isEmpty)
        }
    }

    /// `retract send` of a broadcast still running when a moderator runs
    /// `retract notification`: the devices not yet sent are spared it, and
    /// every device that got it gets the removal.
    /// By reference, or by the conversation the message belongs to (whose range ends when the retraction is made,
    /// after the send began).
    @Test(arguments: [false, true])
    func aRetractionWhileSendIsRunningSparesTheDevicesNotYetSent(byThread: Bool) async throws {
        // Slow answers and a narrow window: each batch of 1,000 devices takes about 5 s to send.
        try await EndToEndTests.withStage(faults: APNsSimulatorFaults(latency: .milliseconds(50))) { stage in
            try stage.addApp("news")
            let devices = TestTokens.tokens(0..<3000)
            let tokens = try stage.apns.file("broadcast.txt", devices.map(\.hex).joined(separator: "\n"))
            let payload = try stage.apns.file("story.json", #"{"aps":{"alert":{"body":"Wrong headline"}}}"#)
            let arguments = [
                "send", "--app", "news", "--reference", "story", "--payload", payload, "--tokens-file", tokens, "--window", "10",
                "--thread", "front-page",
            ]
            let sending = Task {
                try await withCheckedThrowingContinuation { continuation in
                    // A thread of its own: the command blocks until it exits.
                    Thread { continuation.resume(with: Result { try stage.retract(arguments) }) }.start()
                }
            }
            let deadline = ContinuousClock.now + .seconds(60)
            while stage.apns.simulator.statistics.accepted == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let retracted = try stage.retract(
                ["notification", "--app", "news", "--json"] + (byThread ? ["--thread", "front-page"] : ["story"]))
            #expect(retracted.status == 0, "\(retracted.stderr)")
            let account = try EndToEndTests.account(retracted)

            let sent = try await sending.value
            #expect(sent.status == 0, "\(sent.stderr)")
            let reached = devices.filter { stage.apns.inbox($0).contains { $0.pushType == "alert" } }
            let spared = devices.count - reached.count
            #expect(spared >= 1000, "\(sent.stdout)")
            #expect(sent.stdout.contains("sent story: \(reached.count) accepted"), "\(sent.stdout)")
            #expect(sent.stdout.contains("spared: \(spared) devices, never sent it"), "\(sent.stdout)")
            // The retraction covered what was recorded; each device that got the original got its removal.
            #expect((account.state, account.total, account.sent) == ("done", reached.count, reached.count))
            for device in reached { #expect(stage.apns.inbox(device).filter { $0.pushType == "background" }.count == 1) }
            for device in devices where !reached.contains(device) { #expect(stage.apns.inbox(device).isEmpty) }
        }
    }

    /// Bad input is refused with a message naming the flag, and nothing is written.
    @Test func badModeInputIsRefusedNamingTheFlag() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            try stage.record("m1", app: "chat", tokens: TestTokens.tokens(0..<2))

            let unknown = try stage.retract(["notification", "m1", "--app", "chat", "--mode", "loud"])
            #expect(unknown.status == 64)
            #expect(unknown.stderr.contains("'background', 'service-extension'"), "\(unknown.stderr)")

            let badge = try stage.retract(["notification", "m1", "--app", "chat", "--badge", "3"])
            #expect(badge.status == 2)
            #expect(badge.stderr.contains("--badge: a background push cannot set a badge"), "\(badge.stderr)")

            let nothingToReplace = try stage.retract(["notification", "m1", "--app", "chat", "--mode", "replace"])
            #expect(nothingToReplace.status == 2)
            #expect(nothingToReplace.stderr.contains("--mode: replace needs the collapse id"), "\(nothingToReplace.stderr)")

            let longCollapseID = try stage.retract(
                [
                    "record", "--app", "chat", "--reference", "m2", "--token", TestTokens.token(0).hex, "--collapse-id",
                    String(repeating: "c", count: 65),
                ])
            #expect(longCollapseID.status == 2)
            #expect(longCollapseID.stderr.contains("--collapse-id: 65 bytes"), "\(longCollapseID.stderr)")

            let longText = try stage.retract(
                stage.apps.appsAddArguments(name: "other") + ["--retraction-text", String(repeating: "x", count: 1025)])
            #expect(longText.status == 2)
            #expect(longText.stderr.contains("--retraction-text: the retraction text is 1025 bytes"), "\(longText.stderr)")

            let unknownDefault = try stage.retract(stage.apps.appsAddArguments(name: "other") + ["--retraction-mode", "loud"])
            #expect(unknownDefault.status == 64)
            #expect(unknownDefault.stderr.contains("'background', 'service-extension'"), "\(unknownDefault.stderr)")

            // Nothing was sent, recorded, retracted or registered by any of them.
            for device in TestTokens.tokens(0..<2) { #expect(stage.apns.inbox(device).isEmpty) }
            let (apps, recorded) = try await stage.store { store in
                (try await store.apps().map(\.name), try await store.recordedReferences(appID: 1, among: ["m2"]))
            }
            #expect(apps == ["chat"])
            #expect(recorded.isEmpty)
            #expect(try await stage.store { try await SelectorCommandTests.count($0, "SELECT count(*) FROM retractions") } == 0)
        }
    }
}
