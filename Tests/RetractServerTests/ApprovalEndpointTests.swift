import Foundation
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// An app with an approval threshold: a retraction over it sends nothing,
/// lists nothing in the device feed and takes no late delivery until a
/// second key approves it; the key that asked cannot; a rejected or expired
/// one never sends.
@Suite("Approval")
struct ApprovalEndpointTests {
    @Test func aRetractionOverTheThresholdWaitsForASecondKey() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let backend = try await stage.chatKey()
            // The moderator may approve too, but never what it asked for itself.
            let moderator = try await stage.key([.retract, .read, .approve], apps: [stage.chat], name: "moderator")
            let reviewer = try await stage.key([.approve, .read], apps: [stage.chat], name: "reviewer")
            let patched = try await stage.call("PATCH", "/v1/apps/chat", key: admin, body: #"{"approvalThreshold":10}"#)
            #expect(patched.status == 200 && patched.json?["approvalThreshold"] as? Int == 10, "\(patched)")
            let many = TestTokens.tokens(0..<20)
            let few = TestTokens.tokens(20..<25)
            for (reference, tokens) in [("broadcast", many), ("chat-1", few)] {
                let recorded = try await stage.call(
                    "POST", "/v1/deliveries", key: backend,
                    body: #"{"app":"chat","reference":"\#(reference)","tokens":\#(APIStage.hex(tokens))}"#)
                #expect(recorded.status == 201, "\(recorded)")
            }

            // Under the threshold: sent at once.
            let small = try await stage.call("POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["chat-1"]}"#)
            #expect(small.json?["state"] as? String == "queued", "\(small)")
            let smallDone = try await stage.waitUntilDone(try #require(small.json?["id"] as? String), key: moderator)
            #expect(smallDone["sent"] as? Int == 5 && smallDone["approval"] == nil, "\(smallDone)")

            // Over it: it waits, sending nothing, listed nowhere, and a late delivery is not retracted for it.
            let made = try await stage.call("POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["broadcast"]}"#)
            #expect(made.status == 202 && made.json?["state"] as? String == "awaiting-approval", "\(made)")
            let id = try #require(made.json?["id"] as? String)
            let late = TestTokens.token(30)
            let lateRecorded = try await stage.call(
                "POST", "/v1/deliveries", key: backend, body: #"{"app":"chat","reference":"broadcast","tokens":["\#(late.hex)"]}"#)
            #expect(lateRecorded.status == 201)
            try await Task.sleep(for: .milliseconds(500))
            #expect((many + [late]).allSatisfy { stage.apns.inbox($0).isEmpty })
            #expect(try await stage.count("SELECT count(*) FROM device_feed WHERE retraction_id = '\(id)'") == 0)
            #expect(try await stage.count("SELECT count(*) FROM retractions WHERE reason = 'recorded after its retraction'") == 0)
            let waiting = try await stage.call("GET", "/v1/retractions/\(id)", key: moderator)
            let approval = waiting.json?["approval"] as? [String: Any]
            #expect(approval?["state"] as? String == "awaiting" && approval?["expiresAt"] != nil, "\(waiting)")

            // Not by the key that asked, not without a reason, not by a key without the approve scope.
            let own = try await stage.call("POST", "/v1/retractions/\(id)/approve", key: moderator, body: #"{"reason":"looks right"}"#)
            #expect(own.status == 403 && own.text.contains("another key must approve"), "\(own)")
            let unreasoned = try await stage.call("POST", "/v1/retractions/\(id)/approve", key: reviewer, body: #"{"reason":" "}"#)
            #expect(unreasoned.status == 422, "\(unreasoned)")
            let unscoped = try await stage.call("POST", "/v1/retractions/\(id)/approve", key: backend, body: #"{"reason":"x"}"#)
            #expect(unscoped.status == 403 && unscoped.text.contains("approve scope"), "\(unscoped)")

            // Approved by the second key: counted again (the late device is its own) and sent.
            let approved = try await stage.call(
                "POST", "/v1/retractions/\(id)/approve", key: reviewer, body: #"{"reason":"checked with the campaign owner"}"#)
            #expect(approved.status == 200 && approved.json?["state"] as? String == "queued", "\(approved)")
            let done = try await stage.waitUntilDone(id, key: moderator)
            #expect(done["total"] as? Int == 21 && done["sent"] as? Int == 21, "\(done)")
            let decided = done["approval"] as? [String: Any]
            #expect(decided?["state"] as? String == "approved" && (decided?["by"] as? String)?.contains("reviewer") == true, "\(done)")
            #expect((many + [late]).allSatisfy { stage.apns.inbox($0).count == 1 })
            #expect(try await stage.count("SELECT count(*) FROM device_feed WHERE retraction_id = '\(id)'") == 21)
            let again = try await stage.call("POST", "/v1/retractions/\(id)/approve", key: reviewer, body: #"{"reason":"twice"}"#)
            #expect(again.status == 409, "\(again)")
            let audit = try await stage.call("GET", "/v1/audit?app=chat&action=retraction.approved", key: admin)
            let entry = (audit.json?["entries"] as? [[String: Any]])?.first
            #expect((entry?["details"] as? [String: String])?["reason"] == "checked with the campaign owner", "\(audit)")

            // Rejected: nothing more is sent.
            let second = try await stage.call(
                "POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["broadcast"]}"#)
            let secondID = try #require(second.json?["id"] as? String)
            let rejected = try await stage.call(
                "POST", "/v1/retractions/\(secondID)/reject", key: reviewer, body: #"{"reason":"already retracted"}"#)
            #expect(rejected.status == 200 && rejected.json?["state"] as? String == "rejected", "\(rejected)")
            try await Task.sleep(for: .milliseconds(300))
            #expect((many + [late]).allSatisfy { stage.apns.inbox($0).count == 1 })

            // Past its window: a late approval finds it expired, and the server's chores expire the others.
            for _ in 0..<2 {
                _ = try await stage.call("POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["broadcast"]}"#)
            }
            let pending = try await stage.store.client.query(
                "SELECT id FROM retractions WHERE state = 'awaiting-approval' ORDER BY created_at", logger: TestDatabase.logger)
            var lapsed: [UUID] = []
            for try await id in pending.decode(UUID.self) { lapsed.append(id) }
            try #require(lapsed.count == 2)
            _ = try await stage.count(
                "WITH t AS (UPDATE retractions SET approval_expires_at = now() - interval '1 second' WHERE state = 'awaiting-approval' RETURNING 1) SELECT count(*) FROM t"
            )
            let tooLate = try await stage.call(
                "POST", "/v1/retractions/\(lapsed[0].uuidString.lowercased())/approve", key: reviewer, body: #"{"reason":"late"}"#)
            #expect(tooLate.status == 409 && tooLate.text.contains("expired"), "\(tooLate)")
            let deadline = ContinuousClock.now + .seconds(10)
            while try await stage.count("SELECT count(*) FROM retractions WHERE state = 'expired'") < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await stage.count("SELECT count(*) FROM retractions WHERE state = 'expired'") == 2)
            #expect(try await stage.count("SELECT count(*) FROM audit_log WHERE action = 'retraction.expired'") == 2)
            #expect((many + [late]).allSatisfy { stage.apns.inbox($0).count == 1 })
        }
    }

    @Test func theThresholdAndWindowAreCheckedAndACancelWithdrawsAWaitingRetraction() async throws {
        try await APIStage.with { stage in
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            for (body, field) in [
                (#"{"approvalThreshold":-1}"#, "approvalThreshold"), (#"{"approvalWindowMinutes":0}"#, "approvalWindowMinutes"),
                (#"{"approvalWindowMinutes":50000}"#, "approvalWindowMinutes"),
            ] {
                let refused = try await stage.call("PATCH", "/v1/apps/chat", key: admin, body: body)
                #expect(refused.status == 422 && refused.json?["field"] as? String == field, "\(body): \(refused)")
            }
            let set = try await stage.call(
                "PATCH", "/v1/apps/chat", key: admin, body: #"{"approvalThreshold":0,"approvalWindowMinutes":30}"#)
            #expect(set.status == 200 && set.json?["approvalWindowMinutes"] as? Int == 30, "\(set)")
            let moderator = try await stage.key([.retract, .read, .record], apps: [stage.chat], name: "moderator")
            _ = try await stage.call(
                "POST", "/v1/deliveries", key: moderator, body: #"{"app":"chat","reference":"m-1","tokens":["aa","bb"]}"#)
            let made = try await stage.call("POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["m-1"]}"#)
            let id = try #require(made.json?["id"] as? String)
            #expect(made.json?["state"] as? String == "awaiting-approval", "\(made)")
            // A dry run never waits.
            let dryRun = try await stage.call(
                "POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["m-1"],"dryRun":true}"#)
            #expect(dryRun.json?["state"] as? String == "done", "\(dryRun)")
            // The one who asked withdraws it: cancelled, every device spared.
            let cancelled = try await stage.call(
                "POST", "/v1/retractions/\(id)/cancel", key: moderator, body: #"{"reason":"wrong message"}"#)
            #expect(cancelled.status == 200 && cancelled.json?["state"] as? String == "cancelled", "\(cancelled)")
            #expect(cancelled.json?["spared"] as? Int == 2 && cancelled.json?["sent"] as? Int == 0, "\(cancelled)")
            #expect((cancelled.json?["approval"] as? [String: Any])?["state"] as? String == "withdrawn", "\(cancelled)")
            #expect(try await stage.count("SELECT count(*) FROM retractions WHERE feed_forgotten AND id = '\(id)'") == 1)
            // Off again: the next retraction goes at once.
            _ = try await stage.call("PATCH", "/v1/apps/chat", key: admin, body: #"{"approvalThreshold":null}"#)
            let next = try await stage.call("POST", "/v1/retractions", key: moderator, body: #"{"app":"chat","references":["m-1"]}"#)
            #expect(next.json?["state"] as? String == "queued", "\(next)")
        }
    }
}
