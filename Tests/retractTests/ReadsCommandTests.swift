import APNsSimulator
import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// Reads as a chat backend reports them to `retract serve` (`POST /v1/reads`),
/// seen on the simulator's phone model: a user read a conversation on one
/// device, and the others, in the states iOS keeps them in, end up showing
/// none of its messages up to the point and every one after it.
@Suite("retract serve: a read on one phone, gone from the others")
struct ReadsCommandTests {
    /// A message of a conversation as the backend sent it: an alert shown
    /// under its reference, in its thread.
    static func message(_ reference: String, thread: String) -> APNsReceivedPush {
        APNsReceivedPush(
            apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": reference],
            body: Data(
                #"{"aps":{"alert":{"body":"message \#(reference)"},"thread-id":"\#(thread)"},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)","pushNotificationThreadId":"\#(thread)"}}"#
                    .utf8),
            receivedAt: Date.distantPast)
    }

    static let conversation = ["m1", "m2", "m3", "m4", "m5"]

    @Test func threePhonesInThreeStatesEndUpShowingOnlyWhatCameAfterThePointAndTheReaderIsNotPushed() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let key = try ServeCommandTests.createKey(stage, app: "chat", scopes: "record,retract")
            let client = try ServeCommandTests.createKey(stage, app: "chat", scopes: "client")
            let serve = try await ServeProcess.start(
                ["--log-level", "info"], environment: ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath])
            let (suspended, forceQuit, offline, reader) = (TestTokens.token(1), TestTokens.token(2), TestTokens.token(3), TestTokens.token(4))
            let devices = [suspended, forceQuit, offline, reader]
            let feed = RetractionFeed(baseURL: URL(string: "http://127.0.0.1:\(serve.port)")!, apiKey: client)
            let shown = Self.conversation.map { Self.message($0, thread: "conv-1") } + [Self.message("other-1", thread: "conv-2")]
            func phone(_ token: DeviceToken, _ kind: APNsSimulatedDevice.Phone) -> SimulatedPhone {
                SimulatedPhone(deviceToken: token.hex, on: stage.apns.simulator, kind: kind, feed: feed, before: shown)
            }
            let phones = [
                phone(suspended, APNsSimulatedDevice.Phone(appState: .background, burstWindow: 10)),
                phone(forceQuit, APNsSimulatedDevice.Phone(appState: .forceQuit)),
                phone(offline, APNsSimulatedDevice.Phone(appState: .background)),
                phone(reader, APNsSimulatedDevice.Phone(appState: .background)),
            ]
            do {
                // The backend recorded each message to the user's four devices, a second apart.
                let start = Date().addingTimeInterval(-600)
                for (index, reference) in (Self.conversation + ["other-1"]).enumerated() {
                    let thread = reference.hasPrefix("m") ? "conv-1" : "conv-2"
                    let sentAt = start.addingTimeInterval(Double(index)).formatted(.iso8601)
                    let body = """
                        {"app":"chat","reference":"\(reference)","tokens":[\(devices.map { "\"\($0.hex)\"" }.joined(separator: ","))],\
                        "sentAt":"\(sentAt)","thread":"\(thread)","recipient":"alice"}
                        """
                    let recorded = try await serve.http.call("POST", "/v1/deliveries", key: key, body: body)
                    try #require(recorded.status == 201 || recorded.status == 200, "\(recorded)")
                }
                for phone in phones { #expect(await phone.settle().showing.count == 6) }

                // The third phone is offline through both reads; the user reads on the fourth, twice.
                stage.apns.simulator.takeOffline(deviceToken: offline.hex)
                func read(upTo reference: String, badge: Int) async throws -> HTTPAnswer {
                    try await serve.http.call(
                        "POST", "/v1/reads", key: key,
                        body: #"{"app":"chat","recipient":"alice","thread":"conv-1","upToReference":"\#(reference)","reader":"\#(reader.hex)","badge":\#(badge)}"#
                    )
                }
                let first = try await read(upTo: "m2", badge: 4)
                #expect(first.status == 202, "\(first)")
                #expect(first.json?["devices"] as? Int == 3)
                #expect(first.json?["deliveries"] as? Int == 6)
                try await Self.waitForPushes(stage, count: 3, to: [suspended, forceQuit, offline])
                let second = try await read(upTo: "m3", badge: 3)
                #expect(second.status == 202, "\(second)")
                #expect(second.json?["devices"] as? Int == 3)
                // Only m3 is new to each device: m1 and m2 were read already.
                #expect(second.json?["deliveries"] as? Int == 3)
                try await Self.waitForPushes(stage, count: 6, to: [suspended, forceQuit, offline])
                stage.apns.simulator.bringOnline(deviceToken: offline.hex)

                let expected = ["m4", "m5", "other-1"]
                // Suspended: iOS hands the app the second push only, after its burst window; it carries m1 to m3.
                let afterBurst = Date().addingTimeInterval(11)
                let suspendedScreen = await phones[0].settle(now: afterBurst)
                #expect(suspendedScreen.coalesced == 1)
                #expect(suspendedScreen.showing.map(\.identifier) == expected)
                // Force-quit: both pushes dropped; the user opens the app later, which reads the feed.
                let quitScreen = await phones[1].settle(now: afterBurst)
                #expect(quitScreen.dropped == 2)
                #expect(quitScreen.showing.count == 6)
                // The feed lists a read once no older transaction still runs (another test's, on a shared
                // database, may): the user opens the app again until it has, as long as 20 s.
                var opened = await phones[1].openApp(now: afterBurst)
                let deadline = ContinuousClock.now + .seconds(20)
                while opened.showing.map(\.identifier) != expected, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                    opened = await phones[1].openApp(now: afterBurst)
                }
                #expect(opened.showing.map(\.identifier) == expected)
                // Offline: APNs kept the latest push, which carries both reads.
                let offlineScreen = await phones[2].settle(now: afterBurst)
                #expect(offlineScreen.storedAndReplaced == 1)
                #expect(offlineScreen.showing.map(\.identifier) == expected)
                // The device the user read on was not pushed, and shows what it showed.
                #expect(stage.apns.inbox(reader).isEmpty)
                #expect(await phones[3].settle(now: afterBurst).showing.count == 6)

                // A read never shows anything: every push was a silent background push, and none lit a screen.
                for (token, screen) in [(suspended, suspendedScreen), (forceQuit, quitScreen), (offline, offlineScreen)] {
                    let pushes = stage.apns.inbox(token)
                    #expect(pushes.count == 2)
                    #expect(pushes.allSatisfy { $0.pushType == "background" && $0.headers["apns-priority"] == "5" })
                    #expect(!screen.wasWoken(byAnyOf: pushes.map(\.apnsID)))
                    // The latest carries the badge the backend gave with the newest read, for the app to set.
                    #expect(RetractPayload.read(try #require(pushes.last).userInfo).badge == 3)
                }
            } catch {
                _ = try? await serve.stop()
                Issue.record("retract serve's log: \(serve.log.suffix(3000))")
                throw error
            }
            #expect(try await serve.stop() == 0, "\(serve.log.suffix(2000))")
        }
    }

    /// Waits until the simulator took `count` pushes to `tokens`, all told.
    static func waitForPushes(_ stage: EndToEndTests.Stage, count: Int, to tokens: [DeviceToken]) async throws {
        try await ServeCommandTests.waitUntil(timeout: .seconds(30)) { tokens.map { stage.apns.inbox($0).count }.reduce(0, +) >= count }
    }
}
