import APNsSimulator
import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// iOS and APNs keep only the latest push in two common cases, tried
/// through the HTTP API on the simulator's phone model: a suspended app is
/// woken once for a burst of background pushes, and APNs stores only the
/// latest push for a phone that is offline. Every retraction still reaches
/// the screen: earlier retractions ride along in each push, and the
/// extension reads the device feed for what no push brought.
@Suite("Only the latest push reaches the phone, through the API")
struct LatestPushEndpointTests {
    /// A suspended app that iOS wakes once for background pushes within 10 s of each other.
    static let suspended = APNsSimulatedDevice.Phone(appState: .background, burstWindow: 10)

    /// Sends `reference` as a chat message to `devices` with `POST /v1/notifications`.
    static func send(_ reference: String, to devices: [DeviceToken], stage: APIStage, key: String) async throws {
        let sent = try await stage.call(
            "POST", "/v1/notifications", key: key,
            body:
                #"{"app":"chat","reference":"\#(reference)","tokens":\#(APIStage.hex(devices)),"payload":{"aps":{"alert":{"body":"message \#(reference)"},"mutable-content":1}}}"#
        )
        try #require(sent.status == 200, "\(sent)")
        try #require(sent.json?["accepted"] as? Int == devices.count, "\(sent)")
    }

    /// Retracts `reference` with `POST /v1/retractions` and waits until it is done; returns its status.
    static func retract(_ reference: String, stage: APIStage, key: String) async throws -> [String: Any] {
        let id = try await ReconciliationTests.retract([reference], stage: stage, key: key)
        return try await stage.waitUntilDone(id, key: key)
    }

    @Test(.timeLimit(.minutes(3))) func twoDeletionsTwoSecondsApartOnSuspendedPhonesBothGo() async throws {
        try await APIStage.with(phones: APNsPhoneMix(Self.suspended)) { stage in
            let key = try await stage.chatKey()
            let phones = TestTokens.tokens(0..<300)
            for reference in ["m1", "m2", "m3"] { try await Self.send(reference, to: phones, stage: stage, key: key) }

            let first = try await Self.retract("m1", stage: stage, key: key)
            try await Task.sleep(for: .seconds(2))
            let second = try await Self.retract("m2", stage: stage, key: key)
            #expect(first["sent"] as? Int == 300, "\(first)")
            // The second push carries m1 too, on every phone.
            #expect(second["sent"] as? Int == 300, "\(second)")
            #expect(second["historyCarried"] as? Int == 300, "\(second)")
            #expect(second["historyLeftOut"] as? Int == 0, "\(second)")

            let (showing, coalesced) = await stage.apns.simulator.screens(of: phones)
            // iOS handed each app only the second push; m1 and m2 are gone, m3 stays.
            #expect(coalesced == 300)
            #expect(showing == ["m3": 300])
        }
    }

    @Test(.timeLimit(.minutes(3))) func aPhoneOfflineThroughADeletionAndTheNextMessageLosesTheDeletedOneWhenItsExtensionReadsTheFeed()
        async throws
    {
        let kind = APNsSimulatedDevice.Phone(appState: .background, serviceExtension: .filtering)
        try await APIStage.with(phones: APNsPhoneMix(kind)) { stage in
            let key = try await stage.chatKey()
            let client = try await stage.key([.client], apps: [stage.chat], name: "ios-app")
            let token = TestTokens.token(7)
            let phone = SimulatedPhone(
                deviceToken: token.hex, on: stage.apns.simulator, feed: RetractionFeed(baseURL: stage.http.baseURL, apiKey: client))

            try await Self.send("m1", to: [token], stage: stage, key: key)
            #expect(await phone.settle().showing.map(\.identifier) == ["m1"])

            // Offline through the deletion of m1 and the next message: APNs keeps only m2.
            stage.apns.simulator.takeOffline(deviceToken: token.hex)
            let retraction = try await Self.retract("m1", stage: stage, key: key)
            #expect(retraction["sent"] as? Int == 1, "\(retraction)")
            try await Self.send("m2", to: [token], stage: stage, key: key)
            #expect(await phone.settle().showing.map(\.identifier) == ["m1"])
            stage.apns.simulator.bringOnline(deviceToken: token.hex)

            // m2's extension reads the feed: m1 goes, m2 shows.
            let screen = await phone.settle()
            #expect(screen.storedAndReplaced == 1)
            #expect(screen.outcomes.isEmpty)
            #expect(screen.showing.map(\.identifier) == ["m2"])
            #expect(screen.texts == ["m2": "message m2"])

            // The same phone without the feed keeps m1: the retraction push never reached it.
            let withoutFeed = await stage.apns.simulator.screen(of: token.hex)
            #expect(withoutFeed.showing.map(\.identifier) == ["m1", "m2"])
        }
    }
}
