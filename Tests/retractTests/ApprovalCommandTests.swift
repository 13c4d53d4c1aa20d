import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// `retract approve` and `retract reject`: a retraction over its app's
/// threshold waits, the user who asked cannot approve it, another can.
@Suite("retract approve and reject")
struct ApprovalCommandTests {
    @Test func aWaitingRetractionIsApprovedByAnotherUserAndRejectedRetractionsSendNothing() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let set = try stage.retract(["apps", "update", "chat", "--approval-threshold", "2"])
            #expect(set.status == 0 && set.stdout.contains("approvalThreshold (none) -> 2"), "\(set)")
            let devices = TestTokens.tokens(0..<5)
            try stage.record("m-1", app: "chat", tokens: devices)

            let asker = ["USER": "alice"]
            let made = try stage.retract(["notification", "m-1", "--app", "chat", "--json"], environment: asker)
            #expect(made.status == 11, "\(made)")
            let id = try JSONDecoder().decode(CancelCommandTests.Account.self, from: Data(made.stdout.utf8)).id
            #expect(made.stdout.contains(#""state" : "awaiting-approval""#))
            let text = try stage.retract(["status", id])
            #expect(text.stdout.contains("awaiting approval by another key"), "\(text)")
            #expect(stage.apns.simulator.statistics.accepted == 0)

            let own = try stage.retract(["approve", id, "--reason", "mine"], environment: asker)
            #expect(own.status == 2 && own.stderr.contains("another key must approve"), "\(own)")
            let approved = try stage.retract(["approve", id, "--reason", "checked", "--json"], environment: ["USER": "bob"])
            #expect(approved.status == 0, "\(approved)")
            #expect(approved.stdout.contains(#""state" : "queued""#) && approved.stdout.contains("cli:bob"), "\(approved.stdout)")
            let again = try stage.retract(["approve", id, "--reason", "twice"], environment: ["USER": "bob"])
            #expect(again.status == 10, "\(again)")
            // Decided once: neither approved again nor rejected.
            let other = try stage.retract(["reject", id, "--reason", "late"], environment: ["USER": "bob"])
            #expect(other.status == 10, "\(other)")

            let second = try stage.retract(["notification", "m-1", "--app", "chat", "--json"], environment: asker)
            let secondID = try JSONDecoder().decode(CancelCommandTests.Account.self, from: Data(second.stdout.utf8)).id
            let rejected = try stage.retract(["reject", secondID, "--reason", "not needed"], environment: ["USER": "bob"])
            #expect(rejected.status == 0 && rejected.stdout.contains(": rejected"), "\(rejected)")
            #expect(rejected.stdout.contains("rejected by cli:bob"), "\(rejected.stdout)")

            let audit = try stage.retract(["audit", "--action", "retraction.rejected", "--json"])
            let entries = try JSONDecoder().decode([AuditCommandTests.Entry].self, from: Data(audit.stdout.utf8))
            #expect(entries.count == 1 && entries.first?.reason == "not needed" && entries.first?.actor == "cli:bob", "\(entries)")
            let blank = try stage.retract(["approve", secondID, "--reason", " "], environment: ["USER": "bob"])
            #expect(blank.status == 2, "\(blank)")
        }
    }
}
