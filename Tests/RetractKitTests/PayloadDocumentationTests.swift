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
        #expect(blocks.count == 7)  // FCM's blocks are checked by RetractFCMTests
        for block in blocks {
            let info = try userInfo(block)
            #expect(throws: Never.self, "\(block)") { try RetractPayload.customData(in: info) }
            #expect(try RetractPayload.customData(in: info) != nil, "\(block)")
        }
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

    @Test func articleExamplesAreRetractionsOf233() throws {
        let articleBlocks = try jsonBlocks().filter { $0.contains("isReferedNotificationMustRemoved\": true") }
        #expect(articleBlocks.count == 2)
        for block in articleBlocks {
            #expect(RetractPayload.retraction(in: try userInfo(block)) == [233])
        }
    }
}
