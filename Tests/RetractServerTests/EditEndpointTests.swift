import APNsSimulator
import Foundation
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

/// `POST /v1/edits`: what it sends, what it refuses, and what it leaves alone
/// (the device feed, earlier retractions riding along).
@Suite("API edits")
struct EditEndpointTests {
    /// A service-extension edit: an alert with the new title and body under
    /// the original's collapse id and conversation, its custom data the
    /// reference and the edit, and no removal flag.
    @Test func aServiceExtensionEditIsAnAlertInTheOriginalsPlaceAndConversation() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<2)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"chat","reference":"m1","tokens":\#(APIStage.hex(devices)),"collapseId":"slot-1","thread":"c-77"}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let made = try await stage.call(
                "POST", "/v1/edits", key: key,
                body: #"{"app":"chat","reference":"m1","title":"Ada","body":"See you at 9?","mode":"service-extension"}"#)
            #expect(made.status == 202, "\(made)")
            #expect(made.header("Location") == "/v1/retractions/\(made.json?["id"] as? String ?? "")")
            let status = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            #expect(status["sent"] as? Int == 2)
            #expect(status["references"] as? [String] == ["m1"])
            for device in devices {
                let push = try #require(stage.apns.inbox(device).last)
                #expect(push.pushType == "alert")
                #expect(push.collapseID == "slot-1")
                #expect(
                    String(decoding: push.body, as: UTF8.self)
                        == #"{"aps":{"alert":{"title":"Ada","body":"See you at 9?"},"interruption-level":"passive","mutable-content":1,"#
                        + #""relevance-score":0,"thread-id":"c-77"},"#
                        + #""notificationCustomData":{"pushNotificationReferenceId":"m1","pushNotificationEdit":{"title":"Ada","body":"See you at 9?"}}}"#
                )
                // Not a retraction to any client: a RetractKit that knows no edits removes nothing.
                #expect(RetractPayload.retraction(in: push.userInfo) == nil)
            }
        }
    }

    /// An edit takes nothing: the device feed does not list it, and a later
    /// retraction does not carry its reference along as a removal.
    @Test func anEditIsNeitherInTheDeviceFeedNorCarriedAlongByALaterRetraction() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let device = TestTokens.token(1)
            for reference in ["m1", "m2"] {
                let recorded = try await stage.call(
                    "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"\#(reference)","tokens":["\#(device.hex)"]}"#)
                #expect(recorded.status == 201, "\(recorded)")
            }
            let edit = try await stage.call("POST", "/v1/edits", key: key, body: #"{"app":"chat","reference":"m1","body":"fixed"}"#)
            #expect(edit.status == 202, "\(edit)")
            _ = try await stage.waitUntilDone(try #require(edit.json?["id"] as? String), key: key)
            // The ledger's list says m1 was edited, not that it was retracted.
            let listed = try await stage.call("GET", "/v1/notifications?app=chat", key: key)
            let m1 = (listed.json?["notifications"] as? [[String: Any]])?.first { $0["reference"] as? String == "m1" }
            let briefs = m1?["retractions"] as? [[String: Any]] ?? []
            #expect(briefs.count == 1 && briefs.first?["edit"] as? Bool == true, "\(listed)")
            let feed = try await stage.call("GET", "/v1/devices/\(device.hex)/retractions?app=chat", key: key)
            #expect(feed.status == 200, "\(feed)")
            #expect((feed.json?["retractions"] as? [Any])?.isEmpty == true, "\(feed)")

            let retraction = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["m2"]}"#)
            let status = try await stage.waitUntilDone(try #require(retraction.json?["id"] as? String), key: key)
            #expect(status["historyCarried"] as? Int == 0)
            let last = try #require(stage.apns.inbox(device).last)
            #expect(RetractPayload.retraction(in: last.userInfo) == [ReferenceID("m2")])
            let after = try await stage.call("GET", "/v1/devices/\(device.hex)/retractions?app=chat", key: key)
            let entries = after.json?["retractions"] as? [[String: Any]] ?? []
            #expect(entries.map { $0["references"] as? [String] ?? [] } == [["m2"]], "\(after)")
        }
    }

    /// Each bad field is named, with nothing written; an unknown reference is
    /// 404, a retracted one 409, a key without `retract` 403; the same
    /// idempotency key gives the same edit.
    @Test func badEditsAreRefusedNamingTheFieldAndNothingIsWritten() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"m1","tokens":["\#(TestTokens.token(1).hex)"]}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let long = String(repeating: "x", count: 1000)
            let refused: [(body: String, field: String)] = [
                (#"{"app":"chat","reference":"m1","body":""}"#, "body"),
                (#"{"app":"chat","reference":"m1","body":"ok","title":"a\u0001b"}"#, "title"),
                (#"{"app":"chat","reference":"m1","title":"\#(long)","body":"\#(long)"}"#, "body"),
                (#"{"app":"chat","reference":"","body":"ok"}"#, "reference"),
                (#"{"app":"chat","reference":"m1","references":["m1"],"body":"ok"}"#, "references"),
                (#"{"app":"chat","reference":"m1","body":"ok","badge":1,"mode":"replace"}"#, "badge"),
                (#"{"app":"chat","reference":"m1","body":"ok","text":"gone"}"#, "text"),
                (#"{"app":"chat","reference":"m1","body":"ok","mode":"sideways"}"#, "mode"),
                // No collapse id was recorded: nothing to replace.
                (#"{"app":"chat","reference":"m1","body":"ok","mode":"replace"}"#, "mode"),
            ]
            for (body, field) in refused {
                let answer = try await stage.call("POST", "/v1/edits", key: key, body: body)
                #expect(answer.status == 422, "\(body): \(answer)")
                #expect(answer.field == field, "\(body): \(answer)")
            }
            let unknown = try await stage.call("POST", "/v1/edits", key: key, body: #"{"app":"chat","reference":"m9","body":"ok"}"#)
            #expect(unknown.status == 404, "\(unknown)")
            let reader = try await stage.key([.read], apps: [stage.chat])
            let forbidden = try await stage.call("POST", "/v1/edits", key: reader, body: #"{"app":"chat","reference":"m1","body":"ok"}"#)
            #expect(forbidden.status == 403, "\(forbidden)")
            #expect(try await stage.count("SELECT count(*) FROM retractions") == 0)

            let first = try await stage.call(
                "POST", "/v1/edits", key: key, body: #"{"app":"chat","reference":"m1","body":"ok"}"#, headers: ["Idempotency-Key": "e-1"])
            let again = try await stage.call(
                "POST", "/v1/edits", key: key, body: #"{"app":"chat","reference":"m1","body":"ok"}"#, headers: ["Idempotency-Key": "e-1"])
            #expect(first.status == 202 && again.status == 202, "\(first) \(again)")
            #expect(first.json?["id"] as? String == again.json?["id"] as? String)
            let other = try await stage.call(
                "POST", "/v1/edits", key: key, body: #"{"app":"chat","reference":"m1","body":"other"}"#, headers: ["Idempotency-Key": "e-1"]
            )
            #expect(other.status == 409, "\(other)")

            let retraction = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["m1"]}"#)
            #expect(retraction.status == 202, "\(retraction)")
            let late = try await stage.call("POST", "/v1/edits", key: key, body: #"{"app":"chat","reference":"m1","body":"too late"}"#)
            #expect(late.status == 409, "\(late)")
            #expect(late.text.contains("was retracted"), "\(late)")
        }
    }
}
