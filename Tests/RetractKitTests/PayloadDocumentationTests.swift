import Foundation
import RetractKit
import Testing

/// docs/payload.md is the contract client teams read: its examples must be what
/// the code writes and reads.
@Suite("docs/payload.md")
struct PayloadDocumentationTests {
    static let document = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/payload.md")

    func jsonBlocks() throws -> [String] {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        return text.components(separatedBy: "```json\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
    }

    @Test func everyExampleIsJSONWhoseCustomDataReads() throws {
        let blocks = try jsonBlocks()
        #expect(blocks.count == 15)  // FCM's blocks are checked by RetractFCMTests
        for block in blocks {
            let reading = RetractPayload.read(try userInfo(block))
            #expect(reading.customData != nil, "\(block)")
            // Only the example of what a device leaves out has values it cannot read.
            #expect(reading.diagnostics.isEmpty == !block.contains(#"{"id": "m2"}"#), "\(block)")
        }
    }

    @Test func theReadingsTheDocumentDescribesAreRetractKits() throws {
        let blocks = try jsonBlocks()
        let union = try #require(blocks.first { $0.contains("notifcationCustomData") && $0.contains("notificationCustomData") })
        #expect(RetractPayload.retraction(in: try userInfo(union)) == [233, "msg-233"])
        let leftOut = try #require(blocks.first { $0.contains(#"{"id": "m2"}"#) })
        let reading = RetractPayload.read(try userInfo(leftOut))
        #expect(reading.retraction == ["m1", "m4"])
        #expect(
            reading.diagnostics.map(\.key) == (1...3).map { "notificationCustomData.pushNotificationReferenceIds[\($0)]" }
        )
        let ridingAlong = try #require(blocks.first { $0.contains(#"["m2","m1"]"#) })
        #expect(RetractPayload.retraction(in: try userInfo(ridingAlong)) == ["m2", "m1"])
        #expect(try PayloadBuilder().retractionBody(for: ["m2"], addingWhatFitsOf: ["m1"]).body == Data(ridingAlong.utf8))
        let thread = try #require(blocks.first { $0.contains("pushNotificationThreadIds") })
        #expect(RetractPayload.read(try userInfo(thread)).retractedThreads == ["conversation-77"])
        let threadAlong = try #require(blocks.first { $0.contains(#""m9","pushNotificationThreadIds""#) })
        #expect(
            try PayloadBuilder().retractionBody(for: ["m9"], addingWhatFitsOf: [.thread("conversation-77")]).body
                == Data(threadAlong.utf8))
        let account = try #require(blocks.first { $0.contains("pushNotificationAccount") })
        #expect(try PayloadBuilder(account: "acme.zulipchat.com").retractionBodies(for: ["233"]) == [Data(account.utf8)])
        #expect(RetractPayload.read(try userInfo(account)).account == "acme.zulipchat.com")
        let more = try #require(blocks.first { $0.contains("pushNotificationMoreInFeed") })
        #expect(RetractPayload.read(try userInfo(more)).customData?.moreInFeed == true)
        #expect(
            try PayloadBuilder().retractionBody(for: ["spam-0397", "spam-0398", "spam-0399"], addingWhatFitsOf: [], moreInFeed: true).body
                == Data(more.utf8))
    }

    @Test func builderOutputIsQuotedVerbatim() throws {
        let blocks = try jsonBlocks()
        let written = [
            try PayloadBuilder(dialect: .canonical).retractionBodies(for: ["msg-8812"]),
            try PayloadBuilder(dialect: .canonical).retractionBodies(for: ["msg-8812", "msg-8813"]),
            try PayloadBuilder(dialect: .legacy).retractionBodies(for: [233]),
        ]
        for bodies in written {
            #expect(bodies.count == 1)
            #expect(blocks.contains(bodies[0].utf8String), "\(bodies[0].utf8String)")
        }
    }

    /// Each delivery mode's body, fenced as ```json mode-NAME, is what the builder writes.
    @Test(arguments: [
        ("background", RetractionAPS.background),
        ("service-extension", .alert("This message was deleted", mutableContent: true)),
        ("replace", .alert("This message was deleted")),
    ])
    func eachModesBodyIsQuotedVerbatim(mode: String, aps: RetractionAPS) throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let parts = text.components(separatedBy: "```json mode-\(mode)\n")
        try #require(parts.count == 2, "docs/payload.md has no single json mode-\(mode) block")
        let block = parts[1].components(separatedBy: "\n```")[0]
        let bodies = try PayloadBuilder().retractionBodies(for: ["msg-8812"], aps: aps)
        #expect(bodies.map(\.utf8String) == [block])
    }

    /// Each mode's edit, fenced as ```json edit-NAME, is what the server writes for it.
    @Test(arguments: [
        ("background", RetractionAPS.background),
        ("service-extension", .alert(title: "Ada", body: "See you at 9?", mutableContent: true, thread: "c-77")),
        ("replace", .alert(title: "Ada", body: "See you at 9?", thread: "c-77")),
    ])
    func eachModesEditIsQuotedVerbatim(mode: String, aps: RetractionAPS) throws {
        let text = try String(contentsOf: Self.document, encoding: .utf8)
        let parts = text.components(separatedBy: "```json edit-\(mode)\n")
        try #require(parts.count == 2, "docs/payload.md has no single json edit-\(mode) block")
        let block = parts[1].components(separatedBy: "\n```")[0]
        let body = try PayloadBuilder().editBody(for: "msg-8812", edit: NotificationEdit(title: "Ada", body: "See you at 9?"), aps: aps)
        #expect(body.utf8String == block)
        #expect(RetractPayload.read(try userInfo(block)).edit?.body == "See you at 9?")
    }

    @Test func articleExamplesAreRetractionsOf233() throws {
        let articleBlocks = try jsonBlocks().filter {
            $0.contains("isReferedNotificationMustRemoved\": true") && !$0.contains("notificationCustomData")
        }
        #expect(articleBlocks.count == 2)
        for block in articleBlocks {
            #expect(RetractPayload.retraction(in: try userInfo(block)) == [233])
        }
    }
}
