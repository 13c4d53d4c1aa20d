import APNsSimulator
import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// Every kind of deletion reaches phones that keep only the latest
/// background push, through the HTTP API on the simulator's phone model:
/// each retraction push carries the device's earlier retractions whatever
/// their kind, and a deletion too large for one push sends the app to the
/// device feed.
@Suite("Every kind of deletion rides along, through the API")
struct EveryDeletionRidesAlongEndpointTests {
    /// A suspended app that iOS wakes once for background pushes within 30 s of each other.
    static let suspended = APNsSimulatedDevice.Phone(appState: .background, burstWindow: 30)

    @Test(.timeLimit(.minutes(5))) func twoDeletionsOfAnyKindTwoSecondsApartLeaveNeitherMessageOnAnyPhone() async throws {
        try await APIStage.with(phones: APNsPhoneMix(Self.suspended)) { stage in
            let key = try await stage.chatKey()
            // Side by side: the two seconds between deletions overlap.
            try await DeletionScenario.all.forEach(atATime: 3) { scenario in
                try await Self.run(scenario, on: stage, key: key)
            }
        }
    }

    /// Sends a scenario's three messages to its 300 phones with
    /// `POST /v1/notifications`, deletes the first and, two seconds later,
    /// the second with `POST /v1/retractions`, and checks what the phones show.
    static func run(_ scenario: DeletionScenario, on stage: APIStage, key: String) async throws {
        let phones = TestTokens.tokens(scenario.number * 300..<(scenario.number + 1) * 300)
        for index in 1...3 {
            let sent = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body:
                    #"{"app":"chat","reference":"\#(scenario.reference(index))","tokens":\#(APIStage.hex(phones)),\#(scenario.labelFields(of: index)),"payload":{"aps":{"alert":{"body":"a message"}}}}"#
            )
            try #require(sent.status == 200, "\(scenario): \(sent)")
        }
        func delete(_ selection: DeletionScenario.Selection, of index: Int) async throws -> [String: Any] {
            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat",\#(scenario.deletionField(selection, of: index))}"#)
            try #require(made.status == 202, "\(scenario): \(made)")
            return try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
        }
        let first = try await delete(scenario.first, of: 1)
        #expect(first["sent"] as? Int == 300, "\(scenario): \(first)")
        try await Task.sleep(for: .seconds(2))
        let second = try await delete(scenario.second, of: 2)
        // Every phone's second push carries what the first took from it.
        #expect(second["sent"] as? Int == 300, "\(scenario): \(second)")
        #expect(second["historyCarried"] as? Int == 300, "\(scenario): \(second)")
        #expect(second["historyLeftOut"] as? Int == 0, "\(scenario): \(second)")

        let (showing, coalesced) = await stage.apns.simulator.screens(of: phones)
        // iOS handed each app only the second push; m1 and m2 are gone, m3 stays.
        #expect(coalesced == 300, "\(scenario)")
        #expect(showing == [scenario.reference(3): 300], "\(scenario)")
    }

    /// A banned sender's 400 messages on 50 phones: 5 pushes a phone, of
    /// which iOS hands a suspended app only the last. That push says the
    /// rest is in the device feed, which the app reads.
    @Test(.timeLimit(.minutes(3))) func aBannedSendersFourHundredMessagesLeaveNoPhoneWhoseAppReadsTheFeed() async throws {
        try await APIStage.with(phones: APNsPhoneMix(Self.suspended)) { stage in
            let key = try await stage.chatKey()
            let client = try await stage.key([.client], apps: [stage.chat], name: "ios-app")
            let tokens = TestTokens.tokens(0..<50)
            // The phones show the messages (BannedSender.originals); the backend records them, with their sender.
            try await BannedSender.messages.forEach(atATime: 8) { reference in
                let recorded = try await stage.call(
                    "POST", "/v1/deliveries", key: key,
                    body: #"{"app":"chat","reference":"\#(reference)","tokens":\#(APIStage.hex(tokens)),"sender":"S1"}"#)
                try #require(recorded.status == 201, "\(recorded)")
            }

            let made = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","sender":"S1"}"#)
            try #require(made.status == 202, "\(made)")
            let account = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            #expect(account["sent"] as? Int == 50, "\(account)")
            #expect(account["pushes"] as? Int == 250, "\(account)")
            #expect(account["mostPushesToOneDevice"] as? Int == 5, "\(account)")

            let screens = try await BannedSender.screens(
                of: tokens, on: stage.apns.simulator, feed: RetractionFeed(baseURL: stage.http.baseURL, apiKey: client))
            #expect(screens.left == 0, "\(screens)")
            #expect(screens.coalesced == 50 * 4)
            // Without the feed, only the last push's messages would go.
            #expect(screens.leftWithoutFeed > 0 && screens.leftWithoutFeed < 50 * 400, "\(screens)")
        }
    }
}
