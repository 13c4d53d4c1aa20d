import APNsSimulator
import Foundation
import RetractAPNs
import RetractKit
import RetractTestSupport
import Testing

/// iOS and APNs keep only the latest push in two common cases, tried with
/// the `retract` binary as a chat backend's operator runs it, on the
/// simulator's phone model: a suspended app is woken once for a burst of
/// background pushes, and APNs stores only the latest push for a phone that
/// is offline.
@Suite("retract notification: only the latest push reaches the phone")
struct LatestPushCommandTests {
    /// What the phone received before the retractions: `reference` as the
    /// backend sent it, as a hand-made push, shown under its reference.
    static func message(_ reference: String) -> APNsReceivedPush {
        APNsReceivedPush(
            apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": reference],
            body: Data(
                #"{"aps":{"alert":{"body":"message \#(reference)"}},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)"}}"#
                    .utf8),
            receivedAt: Date.distantPast)
    }

    @Test func twoDeletionsTwoSecondsApartOnSuspendedPhonesBothGo() async throws {
        let suspended = APNsSimulatedDevice.Phone(appState: .background, burstWindow: 10)
        try await EndToEndTests.withStage(phones: APNsPhoneMix(suspended)) { stage in
            try stage.addApp("chat")
            let phones = TestTokens.tokens(0..<300)
            for reference in ["m1", "m2", "m3"] { try stage.record(reference, app: "chat", tokens: phones) }

            let first = try stage.retract(["notification", "m1", "--app", "chat", "--json"])
            #expect(first.status == 0, "\(first.stderr)")
            try await Task.sleep(for: .seconds(2))
            let second = try stage.retract(["notification", "m2", "--app", "chat", "--json"])
            #expect(second.status == 0, "\(second.stderr)")
            let account = try JSONDecoder().decode(HistoryCommandTests.History.self, from: Data(second.stdout.utf8))
            #expect(account.sent == 300)
            #expect(account.historyCarried == 300)
            #expect(account.historyLeftOut == 0)

            var showing: [String: Int] = [:]
            var coalesced = 0
            for phone in phones {
                let screen = await APNsSimulatedDevice.replay(
                    ["m1", "m2", "m3"].map(Self.message) + stage.apns.inbox(phone), on: stage.apns.simulator.phone(of: phone.hex))
                for notification in screen.showing { showing[notification.identifier, default: 0] += 1 }
                coalesced += screen.coalesced
            }
            // iOS handed each app only the second push; m1 and m2 are gone, m3 stays.
            #expect(coalesced == 300)
            #expect(showing == ["m3": 300])
        }
    }

    @Test func aPhoneOfflineThroughADeletionAndTheNextMessageLosesTheDeletedOneWhenItsExtensionReadsTheFeed() async throws {
        let kind = APNsSimulatedDevice.Phone(appState: .background, serviceExtension: .filtering)
        try await EndToEndTests.withStage(phones: APNsPhoneMix(kind)) { stage in
            try stage.addApp("chat")
            let client = try ServeCommandTests.createKey(stage, app: "chat", scopes: "client")
            let serve = try await ServeProcess.start(
                [], environment: ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath])
            let token = TestTokens.token(7)
            let phone = SimulatedPhone(
                deviceToken: token.hex, on: stage.apns.simulator,
                feed: RetractionFeed(baseURL: URL(string: "http://127.0.0.1:\(serve.port)")!, apiKey: client))
            // The chat backend sends its messages itself and records them.
            let backend = try APNsClient(
                configuration: APNsClientConfiguration(
                    environment: .custom(host: "127.0.0.1", port: stage.apns.simulator.port),
                    authentication: .token(
                        key: APNsSigningKey(contentsOfFile: stage.apns.keyPath), keyID: SimulatedAPNs.keyID, teamID: SimulatedAPNs.teamID),
                    additionalTrustRootsPEM: [try String(contentsOfFile: stage.apns.caPath, encoding: .utf8)]))
            func send(_ reference: String) async throws {
                let body =
                    #"{"aps":{"alert":{"body":"message \#(reference)"},"mutable-content":1},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)"}}"#
                _ = try await backend.send(
                    APNsRequest(
                        deviceToken: token.hex, topic: "com.example.chat", pushType: .alert, collapseID: reference, body: Array(body.utf8)))
                let recorded = try stage.retract(["record", "--app", "chat", "--reference", reference, "--token", token.hex])
                try #require(recorded.status == 0, "\(recorded.stderr)")
            }

            // Stopped whatever happens: the client's connections, and the server's process.
            func stopBoth() async throws -> Int32 {
                await backend.shutdown()
                return try await serve.stop()
            }
            do {
                try await send("m1")
                #expect(await phone.settle().showing.map(\.identifier) == ["m1"])

                // Offline through the deletion of m1 and the next message: APNs keeps only m2.
                stage.apns.simulator.takeOffline(deviceToken: token.hex)
                let retracted = try stage.retract(["notification", "m1", "--app", "chat"])
                #expect(retracted.status == 0, "\(retracted.stderr)")
                #expect(retracted.stdout.contains("sent 1 ·"), "\(retracted.stdout)")
                try await send("m2")
                stage.apns.simulator.bringOnline(deviceToken: token.hex)

                // m2's extension reads the feed from `retract serve`: m1 goes, m2 shows.
                let screen = await phone.settle()
                #expect(screen.storedAndReplaced == 1)
                #expect(screen.showing.map(\.identifier) == ["m2"])
                // Without the feed, m1 would stay: the retraction push never reached the phone.
                #expect(await stage.apns.simulator.screen(of: token.hex).showing.map(\.identifier) == ["m1", "m2"])
            } catch {
                _ = try? await stopBoth()
                throw error
            }
            #expect(try await stopBoth() == 0, "\(serve.log.suffix(2000))")
        }
    }
}
