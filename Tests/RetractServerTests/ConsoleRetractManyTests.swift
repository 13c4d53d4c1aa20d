import Foundation
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// Retracting a whole campaign, thread, sender or recipient from the console,
/// through real HTTP: the list's way in, the form, the dry run's count, the
/// confirm step, what the phones got and the audit entry.
/// (Tests/Browser/console_test.py does it in Chromium.)
@Suite("Console: retract many")
struct ConsoleRetractManyTests {
    @Test func aModeratorRetractsACampaignWithinATimeRangeAndNothingElse() async throws {
        try await APIStage.with { stage in
            let backend = try await stage.chatKey()
            _ = try await stage.key([.read, .retract], apps: [stage.chat], name: "moderator")
            _ = try await stage.key([.read], apps: [stage.chat], name: "viewer")
            let now = Date()
            // The campaign "spring": sent three hours ago to 10 devices, and one hour ago to 5; "autumn" to 4.
            let early = TestTokens.tokens(0..<10)
            let late = TestTokens.tokens(10..<15)
            let other = TestTokens.tokens(15..<19)
            for (reference, campaign, tokens, hoursAgo) in [
                ("s-1", "spring", early, 3.0), ("s-2", "spring", late, 1.0), ("a-1", "autumn", other, 1.0),
            ] {
                let sentAt = now.addingTimeInterval(-hoursAgo * 3600).formatted(.iso8601)
                let body =
                    #"{"app":"chat","reference":"\#(reference)","campaign":"\#(campaign)","sentAt":"\#(sentAt)","tokens":\#(APIStage.hex(tokens))}"#
                let recorded = try await stage.call("POST", "/v1/deliveries", key: backend, body: body)
                #expect(recorded.status == 201, "\(recorded)")
            }
            let moderator = try await ConsoleTests.session(stage, keyName: "moderator")
            let viewer = try await ConsoleTests.session(stage, keyName: "viewer")

            // The list's way in: a moderator sees "retract this campaign", over the range the list shows; a viewer does not.
            let list = try await stage.http.call("GET", "/console/notifications?sentAfter=", headers: ["Cookie": moderator.cookie])
            #expect(list.text.contains(#"href="/console/retract-many?app=chat&amp;by=campaign&amp;value=spring""#), "\(list.text)")
            #expect(list.text.contains("retract this campaign"))
            let viewed = try await stage.http.call("GET", "/console/notifications?sentAfter=", headers: ["Cookie": viewer.cookie])
            #expect(viewed.status == 200 && !viewed.text.contains("retract this campaign") && !viewed.text.contains("Retract many"))
            let form = try await stage.http.call(
                "GET", "/console/retract-many?app=chat&by=campaign&value=spring", headers: ["Cookie": moderator.cookie])
            #expect(form.status == 200 && form.text.contains(#"id="value" name="value" value="spring""#), "\(form)")
            #expect(form.text.contains(#"<option value="campaign" selected>"#))
            let refused = try await stage.http.call("GET", "/console/retract-many", headers: ["Cookie": viewer.cookie])
            #expect(refused.status == 403 && refused.text.contains("retract scope"), "\(refused)")

            // The dry run counts the campaign's devices in the range, and its notifications.
            let twoHoursAgo = ConsoleTime.inputValue(now.addingTimeInterval(-2 * 3600))
            let fields = [
                "csrf": moderator.formToken, "app": "chat", "by": "campaign", "value": "spring", "sentAfter": twoHoursAgo,
                "sentBefore": "", "reason": "the spring sale went to the wrong region", "mode": "",
            ]
            let dryRun = try await ConsoleTests.post(stage, "/console/dry-run", cookie: moderator.cookie, fields)
            #expect(dryRun.status == 200 && dryRun.text.contains(#"<strong id="dry-run-devices">5</strong>"#), "\(dryRun)")
            #expect(dryRun.text.contains(#"<strong id="dry-run-notifications">1 notification</strong>"#))
            #expect(dryRun.text.contains("every notification of campaign <code>spring</code> sent since"))
            // The confirm form posts the same selector and range again.
            #expect(dryRun.text.contains(#"<input type="hidden" name="sentAfter" value="\#(twoHoursAgo)">"#))
            var anyTime = fields
            anyTime["sentAfter"] = ""
            let whole = try await ConsoleTests.post(stage, "/console/dry-run", cookie: moderator.cookie, anyTime)
            #expect(whole.text.contains(#"<strong id="dry-run-devices">15</strong>"#), "\(whole)")
            #expect(whole.text.contains("2 notifications"))
            var nothing = fields
            nothing["value"] = "winter"
            let none = try await ConsoleTests.post(stage, "/console/dry-run", cookie: moderator.cookie, nothing)
            #expect(none.text.contains(#"id="nothing-to-retract""#) && !none.text.contains(#"id="confirm""#), "\(none)")

            // Bad fields are named, and nothing is made.
            let bad: [([String: String], String)] = [
                (["by": "colour"], "Retract by: \"colour\" is not one of thread, sender, recipient, campaign"),
                (["value": ""], "campaign: must not be empty"),
                (["sentAfter": "last tuesday"], "Sent after: \"last tuesday\" is not a time"),
                (["sentBefore": ConsoleTime.inputValue(now.addingTimeInterval(86_400))], "Sent before: "),
                (["sentBefore": twoHoursAgo, "sentAfter": twoHoursAgo], "Sent after: "),
                (["reference": "s-1"], "reference: name one reference or a campaign, not both"),
            ]
            for (change, problem) in bad {
                let posted = try await ConsoleTests.post(
                    stage, "/console/retract", cookie: moderator.cookie, fields.merging(change) { $1 })
                #expect(posted.status == 422 && posted.text.contains(ConsoleHTML.escape(problem)), "\(change): \(posted)")
            }
            #expect(try await stage.count("SELECT count(*) FROM retractions WHERE NOT dry_run") == 0)

            // Confirmed: the late send's devices get the removal, the early send's and the other campaign's nothing.
            let retracted = try await ConsoleTests.post(stage, "/console/retract", cookie: moderator.cookie, fields)
            #expect(retracted.status == 200 && retracted.text.contains("campaign spring"), "\(retracted)")
            let audit = try #require(try await stage.store.auditLog(limit: 1).first)
            #expect(audit.action == "retraction.created" && audit.actor.contains("moderator"), "\(audit)")
            #expect(audit.details["selector"]?.contains("campaign \"spring\"") == true, "\(audit.details)")
            #expect(audit.details["reason"] == "the spring sale went to the wrong region" && audit.details["devices"] == "5")
            let id = try #require(audit.subject)
            let events = try await stage.http.call("GET", "/console/retractions/\(id)/events", headers: ["Cookie": moderator.cookie])
            let last = try #require(events.text.components(separatedBy: "\n").last { $0.hasPrefix("data: ") })
            #expect(last.contains(#""state":"done""#) && last.contains(#""sent":5"#), "\(last)")
            for token in late { #expect(stage.apns.inbox(token).count == 1) }
            for token in early + other { #expect(stage.apns.inbox(token).isEmpty) }
            // The audit page lists it with its selector.
            let auditPage = try await stage.http.call("GET", "/console/audit", headers: ["Cookie": moderator.cookie])
            #expect(auditPage.text.contains("campaign &quot;spring&quot;"), "\(auditPage.text)")
        }
    }
}
