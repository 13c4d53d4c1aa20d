import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// `retract cancel`: a queued retraction stopped from the terminal, its
/// account, the audit log, and what it refuses.
@Suite("retract cancel")
struct CancelCommandTests {
    struct Account: Decodable {
        var id: String
        var state: String
        var total: Int
        var sent: Int
        var spared: Int
        var pending: Int
        var cancelled: Cancelled?

        struct Cancelled: Decodable {
            var by: String
            var reason: String
        }
    }

    @Test func aQueuedRetractionIsCancelledWithItsDevicesSparedAndAudited() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            try stage.record("m-1", app: "chat", tokens: TestTokens.tokens(0..<5))
            // Queued and left: no worker sends it.
            let made = try stage.retract(["notification", "m-1", "--app", "chat", "--no-wait", "--json"])
            #expect(made.status == 0, "\(made.stderr)")
            let id = try JSONDecoder().decode(Account.self, from: Data(made.stdout.utf8)).id

            let cancelled = try stage.retract(["cancel", id, "--reason", "wrong message", "--json"])
            #expect(cancelled.status == 0, "\(cancelled.stderr)")
            let account = try JSONDecoder().decode(Account.self, from: Data(cancelled.stdout.utf8))
            #expect(account.state == "cancelled")
            #expect(account.total == 5 && account.sent == 0 && account.spared == 5 && account.pending == 0)
            #expect(account.cancelled?.reason == "wrong message" && account.cancelled?.by.hasPrefix("cli:") == true)
            #expect(stage.apns.simulator.statistics.accepted == 0)

            let again = try stage.retract(["cancel", id, "--reason", "twice"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stderr.contains("cancelled already"), "\(again.stderr)")
            #expect(again.stdout.contains("spared 5") && again.stdout.contains("wrong message"), "\(again.stdout)")
            // `status` shows it as it is now.
            let status = try stage.retract(["status", id])
            #expect(status.status == 0 && status.stdout.contains(": cancelled"), "\(status)")

            let audit = try stage.retract(["audit", "--action", "retraction.cancelled", "--json"])
            #expect(audit.status == 0, "\(audit.stderr)")
            let entries = try JSONDecoder().decode([AuditCommandTests.Entry].self, from: Data(audit.stdout.utf8))
            #expect(entries.count == 1 && entries.first?.subject == id && entries.first?.reason == "wrong message", "\(entries)")

            // What it refuses, and how it exits.
            let dryRun = try stage.retract(["notification", "m-1", "--app", "chat", "--dry-run", "--json"])
            let dryID = try JSONDecoder().decode(Account.self, from: Data(dryRun.stdout.utf8)).id
            let refused = try stage.retract(["cancel", dryID, "--reason", "a dry run"])
            #expect(refused.status == 10 && refused.stderr.contains("dry run"), "\(refused)")
            let blank = try stage.retract(["cancel", id, "--reason", "  "])
            #expect(blank.status == 2 && blank.stderr.contains("--reason"), "\(blank)")
            let notAnID = try stage.retract(["cancel", "nope", "--reason", "x"])
            #expect(notAnID.status == 2, "\(notAnID)")
            let unknown = try stage.retract(["cancel", UUID().uuidString, "--reason", "x"])
            #expect(unknown.status == 7 && unknown.stderr.contains("no retraction"), "\(unknown)")
            let missing = try stage.retract(["cancel", id])
            #expect(missing.status == 64, "\(missing)")
        }
    }
}
