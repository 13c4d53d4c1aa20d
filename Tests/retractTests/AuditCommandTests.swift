import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// `retract audit`: the audit log from the ledger, as a table or JSON.
@Suite("retract audit")
struct AuditCommandTests {
    struct Entry: Decodable {
        var action: String
        var actor: String
        var app: String?
        var keyName: String?
        var subject: String?
        var reason: String?
    }

    @Test func printsWhoDidWhatNewestFirst() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            try stage.addApp("shop")
            try stage.record("m-1", app: "chat", tokens: TestTokens.tokens(0..<3))
            let retracted = try stage.retract(["notification", "m-1", "--app", "chat", "--dry-run", "--reason", "posted twice", "--json"])
            #expect(retracted.status == 0, "\(retracted.stderr)")
            let key = try stage.retract(["keys", "create", "--scopes", "admin", "--name", "ops"])
            #expect(key.status == 0, "\(key.stderr)")

            let all = try stage.retract(["audit", "--json"])
            #expect(all.status == 0, "\(all.stderr)")
            let entries = try JSONDecoder().decode([Entry].self, from: Data(all.stdout.utf8))
            #expect(entries.map(\.action) == ["key.created", "retraction.created", "app.registered", "app.registered"])
            #expect(entries.map(\.app) == [nil, "chat", "shop", "chat"])
            #expect(entries[1].reason == "posted twice" && entries[1].actor.hasPrefix("cli:") && entries[1].keyName == nil)

            // One app's, as a table: a header and a line per entry.
            let chat = try stage.retract(["audit", "--app", "chat"])
            #expect(chat.status == 0, "\(chat.stderr)")
            let lines = chat.stdout.split(separator: "\n")
            #expect(lines.count == 3, "\(chat.stdout)")
            #expect(lines.first?.hasPrefix("AT") == true && lines.first?.contains("REASON") == true)
            #expect(lines[1].contains("retraction.created") && lines[1].contains("chat") && lines[1].hasSuffix("posted twice"))
            #expect(lines[2].contains("app.registered") && !lines[2].contains("shop"))

            let limited = try stage.retract(["audit", "--since", "1h", "--limit", "2", "--json"])
            #expect(
                try JSONDecoder().decode([Entry].self, from: Data(limited.stdout.utf8)).map(\.action) == [
                    "key.created", "retraction.created",
                ])
            let future = try stage.retract(["audit", "--since", "2099-01-01T00:00:00Z"])
            #expect(future.status == 0 && future.stdout == "no audit entries\n", "\(future)")

            let unknown = try stage.retract(["audit", "--app", "nope"])
            #expect(unknown.status == 6 && unknown.stderr.contains("nope"), "\(unknown.stderr)")
            for bad in [["--since", "yesterday"], ["--limit", "0"], ["--action", ""]] {
                let refused = try stage.retract(["audit"] + bad)
                #expect(refused.status == 2, "\(bad): \(refused.stderr)")
            }
        }
    }
}
