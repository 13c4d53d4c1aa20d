import FCMSimulator
import Foundation
import NIOCore
import RetractFCM
import RetractKit
import Testing

/// docs/payload.md's FCM examples are what FCMMessage writes and what the simulator hands the app.
@Suite("docs/payload.md, FCM")
struct FCMPayloadDocumentationTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/payload.md")

    /// The JSON of the block fenced as ```json `tag`, parsed.
    func block(_ tag: String) throws -> NSDictionary {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let parts = text.components(separatedBy: "```json \(tag)\n")
        try #require(parts.count == 2, "docs/payload.md has no single json \(tag) block")
        let json = parts[1].components(separatedBy: "\n```")[0]
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)
    }

    @Test func theMessageAndTheUserInfoAreWhatRetractSendsAndTheAppGets() async throws {
        let documented = try block("fcm-message")
        let token = try #require((documented["message"] as? NSDictionary)?["token"] as? String)
        let written = try #require(
            try JSONSerialization.jsonObject(with: Data(buffer: retractionMessage(["msg-8812"]).request(token: token))) as? NSDictionary)
        #expect(written == documented)

        try await FCMHarness.with { harness, client in
            try await client.send(try retractionMessage(["msg-8812"]).request(token: token))
            let received = try #require(harness.simulator.inbox(for: token).first)
            let userInfo = try #require(try JSONSerialization.jsonObject(with: received.userInfoJSON) as? NSDictionary)
            #expect(userInfo == (try block("fcm-userinfo")))
            #expect(RetractPayload.retraction(in: received.userInfo) == ["msg-8812"])
        }
    }
}
