import APNsSimulator
import Foundation
import PostgresNIO
import RetractKit
import RetractTestSupport
import Testing

/// Conversations, senders, recipients and campaigns over the API.
@Suite("API selectors")
struct SelectorEndpointTests {
    @Test func deliveriesAndNotificationsKeepTheirLabels() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<2)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"""
                    [{"app":"chat","reference":"m1","tokens":\#(APIStage.hex(devices)),"thread":"c-1","sender":"ann"},
                     {"app":"chat","reference":"m2","tokens":\#(APIStage.hex(devices)),"recipient":"bob","campaign":"spring"}]
                    """#)
            #expect(recorded.status == 201, "\(recorded)")
            let sent = try await stage.call(
                "POST", "/v1/notifications", key: key,
                body: #"{"app":"chat","reference":"m3","tokens":\#(APIStage.hex(devices)),"thread":"c-1","payload":{"aps":{"alert":"hi"}}}"#
            )
            #expect(sent.status == 200, "\(sent)")
            #expect(
                try await stage.count("SELECT count(*) FROM deliveries WHERE thread = 'c-1' AND (reference = 'm3' OR sender = 'ann')") == 4)
            #expect(try await stage.count("SELECT count(*) FROM deliveries WHERE recipient = 'bob' AND campaign = 'spring'") == 2)
            for device in devices {
                #expect((stage.apns.inbox(device).first?.userInfo["aps"] as? [String: Any])?["thread-id"] as? String == "c-1")
            }

            // A bad label is named by its place; nothing of the request is written.
            let bad = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"""
                    [{"app":"chat","reference":"m4","tokens":\#(APIStage.hex(devices))},
                     {"app":"chat","reference":"m4","tokens":\#(APIStage.hex(devices)),"campaign":""}]
                    """#)
            #expect(bad.status == 422, "\(bad)")
            #expect(bad.json?["field"] as? String == "[1].campaign", "\(bad)")
            #expect(try await stage.count("SELECT count(*) FROM deliveries WHERE reference = 'm4'") == 0)
        }
    }

    /// A chat deletes a conversation of 50 messages for everyone: one push
    /// per device, every message of it gone from every phone, the other
    /// conversation untouched.
    @Test func aConversationOfFiftyMessagesRetractedByThreadLeavesNoPhoneShowingIt() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<3)
            let messages = (1...50).map { ("c-1", "m\($0)") } + (1...5).map { ("c-2", "n\($0)") }
            for (thread, reference) in messages {
                let sent = try await stage.call(
                    "POST", "/v1/notifications", key: key,
                    body:
                        #"{"app":"chat","reference":"\#(reference)","tokens":\#(APIStage.hex(devices)),"thread":"\#(thread)","payload":{"aps":{"alert":"\#(reference)"}}}"#
                )
                try #require(sent.status == 200, "\(sent)")
            }

            let dryRun = try await stage.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","thread":"c-1","dryRun":true}"#)
            #expect(dryRun.status == 202, "\(dryRun)")
            #expect(dryRun.json?["devices"] as? Int == 3)
            #expect(dryRun.json?["referencesMatched"] as? Int == 50)
            #expect(dryRun.json?["mostReferencesPerDevice"] as? Int == 50)
            #expect(dryRun.json?["warnings"] == nil)

            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","thread":"c-1","reason":"conversation deleted"}"#)
            #expect(made.status == 202, "\(made)")
            let status = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            #expect(status["thread"] as? String == "c-1")
            #expect(status["references"] as? [String] == [])
            #expect(status["sentBefore"] as? String != nil)
            #expect(status["total"] as? Int == 3)
            #expect(status["sent"] as? Int == 3)
            #expect(status["pushes"] as? Int == 3)
            #expect(status["mostPushesToOneDevice"] as? Int == 1)

            for device in devices {
                let inbox = stage.apns.inbox(device)
                let retractions = inbox.filter { $0.pushType == "background" }
                #expect(retractions.count == 1)
                #expect(RetractPayload.read(retractions[0].userInfo).retractedThreads == ["c-1"])
                let screen = await APNsSimulatedDevice.replay(inbox)
                #expect(screen.showing.map(\.identifier).sorted() == (1...5).map { "n\($0)" })
            }
            // The audit log says what was selected.
            #expect(
                try await stage.count("SELECT count(*) FROM audit_log WHERE details->>'selector' LIKE 'thread \"c-1\" sent before %'") == 2)
        }
    }

    /// Two selectors at once, an empty value, references beside a selector,
    /// a range without a selector or in the future, an unknown app: each
    /// refused naming its field, and nothing written.
    @Test func badSelectorsAreRefusedNamingTheirFieldAndNothingIsWritten() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let devices = TestTokens.tokens(0..<2)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"chat","reference":"m1","tokens":\#(APIStage.hex(devices)),"thread":"c-1","sender":"ann"}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let future = Date().addingTimeInterval(3600).formatted(.iso8601)
            let cases: [(body: String, status: Int, field: String?, detail: String)] = [
                (#"{"app":"chat","thread":"c-1","sender":"ann"}"#, 422, "sender", "give one selector, not thread and sender"),
                (#"{"app":"chat","thread":""}"#, 422, "thread", "must not be empty"),
                (#"{"app":"chat","campaign":"\u0007"}"#, 422, "campaign", "control characters"),
                (#"{"app":"chat","references":["m1"],"thread":"c-1"}"#, 422, "references", "not both"),
                (#"{"app":"chat","references":["m1"],"sentAfter":"2026-01-01T00:00:00Z"}"#, 422, "sentAfter", "goes with a selector"),
                (#"{"app":"chat","sender":"ann","sentBefore":"\#(future)"}"#, 422, "sentBefore", "in the future"),
                (#"{"app":"chat","sender":"ann","sentAfter":"yesterday"}"#, 422, "sentAfter", "RFC 3339"),
                (
                    #"{"app":"chat","sender":"ann","sentAfter":"2026-11-20T00:00:00Z","sentBefore":"2026-11-19T00:00:00Z"}"#, 422,
                    "sentAfter", "is not before"
                ),
                (#"{"app":"chat"}"#, 422, "references", "or one selector"),
                (#"{"app":"nope","thread":"c-1"}"#, 404, "app", "nope"),
            ]
            for (body, status, field, detail) in cases {
                let answer = try await stage.call("POST", "/v1/retractions", key: key, body: body)
                #expect(answer.status == status, "\(body): \(answer)")
                #expect(answer.json?["field"] as? String == field, "\(body): \(answer)")
                #expect((answer.json?["detail"] as? String)?.contains(detail) == true, "\(body): \(answer)")
            }
            #expect(try await stage.count("SELECT count(*) FROM retractions") == 0)
            #expect(try await stage.count("SELECT count(*) FROM audit_log WHERE action = 'retraction.created'") == 0)
            // An empty list of references beside a selector names no reference: the selector is the target.
            let dry = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":[],"thread":"c-1","dryRun":true}"#)
            #expect(dry.status == 202, "\(dry)")
            #expect(dry.json?["devices"] as? Int == 2, "\(dry)")
            #expect(dry.json?["referencesMatched"] as? Int == 1, "\(dry)")
        }
    }
}
