import APNsSimulator
import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Earlier retractions ride along in each retraction push, through the
/// `retract` binary as a user runs it.
@Suite("retract notification: earlier retractions ride along")
struct HistoryCommandTests {
    struct History: Decodable {
        var sent: Int
        var historyCarried: Int
        var historyLeftOut: Int
    }

    /// More recent retractions than fit a 4 KB body: the device gets the
    /// newest that fit, and the account says how many were left out.
    @Test func aDeviceWithMoreRecentRetractionsThanFitGetsTheNewestAndTheAccountCountsTheRest() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let device = TestTokens.token(3)
            let earlier = (0..<120).map {
                "conversation-4711-message-" + String(format: "%06d", $0) + "-" + String(repeating: "x", count: 40)
            }
            for reference in earlier + ["now"] { try stage.record(reference, app: "chat", tokens: [device]) }
            // Retracted one by one, oldest first (queued: what was asked is what rides along).
            try await stage.store { store in
                let app = try #require(try await store.app(named: "chat"))
                for reference in earlier {
                    _ = try await store.createRetraction(
                        RetractionRequest(appID: app.id, target: .references([ReferenceID(reference)]), requestedBy: "tests"))
                }
            }
            let result = try stage.retract(["notification", "now", "--app", "chat", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let account = try JSONDecoder().decode(History.self, from: Data(result.stdout.utf8))
            #expect(account.sent == 1)
            #expect(account.historyCarried > 10)
            #expect(account.historyCarried + account.historyLeftOut == earlier.count)

            let latest = try #require(stage.apns.inbox(device).last)
            #expect(latest.body.count <= 4096)
            let customData = try #require(latest.userInfo["notificationCustomData"] as? [String: Any])
            let carried = try #require(customData["pushNotificationReferenceIds"] as? [String])
            #expect(carried == ["now"] + earlier.reversed().prefix(account.historyCarried))

            // The text account says it too.
            let text = try stage.retract(["status", try account.id(from: result)])
            #expect(
                text.stdout.contains(
                    "earlier retractions: \(account.historyCarried) references and threads rode along, \(account.historyLeftOut) left out (no room in the body)"
                ),
                "\(text.stdout)")
        }
    }
}

extension HistoryCommandTests.History {
    func id(from result: RetractCLI.Result) throws -> String {
        try EndToEndTests.account(result).id
    }
}
