import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// `Idempotency-Key` on POSTs: a retried request gets its first answer
/// back; a key reused for another request is a conflict.
@Suite("API idempotency")
struct IdempotencyTests {
    @Test func theSameKeyAndBodyReplayTheFirstAnswerAndMakeOneRetraction() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            _ = try await stage.call("POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"m","tokens":["aa","bb"]}"#)
            let body = #"{"app":"chat","references":["m"],"reason":"oops"}"#
            let first = try await stage.call("POST", "/v1/retractions", key: key, body: body, headers: ["Idempotency-Key": "delete-m-1"])
            let second = try await stage.call("POST", "/v1/retractions", key: key, body: body, headers: ["Idempotency-Key": "delete-m-1"])
            #expect(first.status == 202, "\(first)")
            #expect(second.status == 202)
            #expect(second.body == first.body)
            #expect(first.header("Idempotent-Replayed") == nil)
            #expect(second.header("Idempotent-Replayed") == "true")
            #expect(second.header("Location") == first.header("Location"))
            #expect(second.header("Location") != nil)
            #expect(try await stage.count("SELECT count(*) FROM retractions") == 1)

            let other = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["m"],"reason":"other"}"#,
                headers: ["Idempotency-Key": "delete-m-1"])
            #expect(other.status == 409)
            #expect(other.problem == "idempotency-conflict")
            #expect(other.field == "Idempotency-Key")
            #expect(try await stage.count("SELECT count(*) FROM retractions") == 1)
        }
    }

    @Test func aReplayedRecordingAnswersAsTheFirstDid() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let body = #"{"app":"chat","reference":"m","tokens":["aa","bb"]}"#
            let first = try await stage.call("POST", "/v1/deliveries", key: key, body: body, headers: ["Idempotency-Key": "batch-7"])
            let retried = try await stage.call("POST", "/v1/deliveries", key: key, body: body, headers: ["Idempotency-Key": "batch-7"])
            #expect(first.json?["recorded"] as? Int == 2)
            // Without the key, recording again reports 0 new deliveries; the replay gives the first answer.
            #expect(retried.json?["recorded"] as? Int == 2)
            #expect(retried.status == 201)
        }
    }

    @Test func aRefusedRequestLeavesTheKeyFreeAndKeysArePerAPIKey() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let other = try await stage.key([.retract, .read], apps: [stage.chat], name: "moderation")
            let bad = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":[]}"#, headers: ["Idempotency-Key": "k"])
            #expect(bad.status == 422)
            let good = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["a"]}"#, headers: ["Idempotency-Key": "k"])
            #expect(good.status == 202, "\(good)")
            #expect(good.header("Idempotent-Replayed") == nil)
            let otherKey = try await stage.call(
                "POST", "/v1/retractions", key: other, body: #"{"app":"chat","references":["b"]}"#, headers: ["Idempotency-Key": "k"])
            #expect(otherKey.status == 202, "\(otherKey)")
            #expect(otherKey.json?["id"] as? String != good.json?["id"] as? String)
            #expect(try await stage.count("SELECT count(*) FROM retractions") == 2)
        }
    }
}
