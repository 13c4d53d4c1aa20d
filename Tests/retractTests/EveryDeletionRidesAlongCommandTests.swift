import APNsSimulator
import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Every kind of deletion reaches phones that keep only the latest
/// background push, tried with the `retract` binary as a chat backend's
/// operator runs it, on the simulator's phone model: each retraction push
/// carries the device's earlier retractions whatever their kind, and a
/// deletion too large for one push sends the app to the device feed.
@Suite("retract notification: every kind of deletion rides along")
struct EveryDeletionRidesAlongCommandTests {
    /// A suspended app that iOS wakes once for background pushes within 30 s of each other.
    static let suspended = APNsSimulatedDevice.Phone(appState: .background, burstWindow: 30)

    @Test(.timeLimit(.minutes(6))) func twoDeletionsOfAnyKindTwoSecondsApartLeaveNeitherMessageOnAnyPhone() async throws {
        try await EndToEndTests.withStage(phones: APNsPhoneMix(Self.suspended)) { stage in
            try stage.addApp("chat")
            let payload = try stage.apns.file("message.json", #"{"aps":{"alert":{"body":"a message"}}}"#)
            // Four scenarios at a time: each runs its commands one after the other.
            try await DeletionScenario.all.forEach(atATime: 4) { scenario in
                try await Self.run(scenario, on: stage, payload: payload)
            }
        }
    }

    /// Sends a scenario's three messages to its 300 phones, deletes the
    /// first and, two seconds later, the second, and checks what the phones show.
    static func run(_ scenario: DeletionScenario, on stage: EndToEndTests.Stage, payload: String) async throws {
        let phones = TestTokens.tokens(scenario.number * 300..<(scenario.number + 1) * 300)
        let file = try stage.apns.file("phones-\(scenario.number).txt", phones.map(\.hex).joined(separator: "\n"))
        func retract(_ arguments: [String]) async throws -> RetractCLI.Result {
            try await withCheckedThrowingContinuation { continuation in
                // A thread of its own: the command blocks until it exits.
                Thread { continuation.resume(with: Result { try stage.retract(arguments) }) }.start()
            }
        }
        for index in 1...3 {
            let sent = try await retract(
                ["send", "--app", "chat", "--reference", scenario.reference(index), "--payload", payload, "--tokens-file", file]
                    + scenario.labelFlags(of: index))
            try #require(sent.status == 0, "\(scenario): \(sent.stderr)")
        }

        let first = try await retract(["notification"] + scenario.deletionArguments(scenario.first, of: 1) + ["--app", "chat"])
        #expect(first.status == 0, "\(scenario): \(first.stderr)")
        try await Task.sleep(for: .seconds(2))
        let second = try await retract(["notification"] + scenario.deletionArguments(scenario.second, of: 2) + ["--app", "chat", "--json"])
        #expect(second.status == 0, "\(scenario): \(second.stderr)")
        // Every phone's second push carries what the first took from it.
        let account = try JSONDecoder().decode(HistoryCommandTests.History.self, from: Data(second.stdout.utf8))
        #expect(account.sent == 300, "\(scenario)")
        #expect(account.historyCarried == 300, "\(scenario)")
        #expect(account.historyLeftOut == 0, "\(scenario)")

        let (showing, coalesced) = await stage.apns.simulator.screens(of: phones)
        // iOS handed each app only the second push; m1 and m2 are gone, m3 stays.
        #expect(coalesced == 300, "\(scenario)")
        #expect(showing == [scenario.reference(3): 300], "\(scenario)")
    }

    /// A banned sender's 400 messages on 50 phones: 5 pushes a phone, of
    /// which iOS hands a suspended app only the last. That push says the
    /// rest is in the device feed; the app reads it from `retract serve`.
    @Test(.timeLimit(.minutes(4))) func aBannedSendersFourHundredMessagesLeaveNoPhoneWhoseAppReadsTheFeed() async throws {
        try await EndToEndTests.withStage(phones: APNsPhoneMix(Self.suspended)) { stage in
            try stage.addApp("chat")
            let client = try ServeCommandTests.createKey(stage, app: "chat", scopes: "client")
            let serve = try await ServeProcess.start(
                [], environment: ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath])
            let tokens = TestTokens.tokens(0..<50)
            let messages = BannedSender.messages
            do {
                // The phones show the messages (BannedSender.originals); the backend recorded them, with their sender.
                try await stage.store { store in
                    let app = try #require(try await store.app(named: "chat"))
                    try await store.record(
                        messages.flatMap { reference in
                            tokens.map {
                                Delivery(
                                    appID: app.id, reference: ReferenceID(reference), token: $0, sentAt: Date(),
                                    labels: DeliveryLabels(sender: "S1"))
                            }
                        })
                }

                let retracted = try stage.retract(["notification", "--sender", "S1", "--app", "chat", "--json"])
                #expect(retracted.status == 0, "\(retracted.stderr)")
                let account = try JSONDecoder().decode(BannedSender.Account.self, from: Data(retracted.stdout.utf8))
                #expect(account.sent == 50)
                #expect(account.pushes == 250 && account.mostPushesToOneDevice == 5, "\(retracted.stdout)")

                let feed = RetractionFeed(baseURL: URL(string: "http://127.0.0.1:\(serve.port)")!, apiKey: client)
                let screens = try await BannedSender.screens(of: tokens, on: stage.apns.simulator, feed: feed)
                #expect(screens.left == 0, "\(screens)")
                #expect(screens.coalesced == 50 * 4)
                // Without the feed, only the last push's messages would go.
                #expect(screens.leftWithoutFeed > 0 && screens.leftWithoutFeed < 50 * 400, "\(screens)")
            } catch {
                _ = try? await serve.stop()
                throw error
            }
            #expect(try await serve.stop() == 0, "\(serve.log.suffix(2000))")
        }
    }
}
