import Foundation
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

/// `retract apps update`: a change printed field by field and audited; the
/// next retraction from the terminal uses it; a bad value is refused naming
/// its flag, with nothing changed.
@Suite("retract apps update")
struct AppsUpdateCommandTests {
    @Test func aChangeIsPrintedAuditedAndUsedByTheNextRetraction() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let changed = try stage.retract([
                "apps", "update", "chat", "--retraction-mode", "service-extension", "--retraction-text", "Deleted by the sender",
            ])
            #expect(changed.status == 0, "\(changed.stderr)")
            #expect(changed.stdout.contains("app chat: retractionMode background -> service-extension"), "\(changed.stdout)")
            #expect(changed.stdout.contains("app chat: retractionText \(RetractionMode.defaultText) -> Deleted by the sender"))
            let again = try stage.retract(["apps", "update", "chat", "--retraction-mode", "service-extension"])
            #expect(again.status == 0 && again.stdout.contains("nothing changed"), "\(again)")

            let audit = try stage.retract(["audit", "--action", "app.updated", "--json"])
            let entries = try JSONDecoder().decode([AuditCommandTests.Entry].self, from: Data(audit.stdout.utf8))
            #expect(entries.count == 2 && entries.allSatisfy { $0.subject == "chat" }, "\(audit.stdout)")

            // The next retraction takes the app's new mode and, given one, a text of its own.
            let devices = TestTokens.tokens(0..<3)
            try stage.record("m-1", app: "chat", tokens: devices)
            let retracted = try stage.retract(["notification", "m-1", "--app", "chat", "--text", "Removed by a moderator", "--json"])
            #expect(retracted.status == 0, "\(retracted.stderr)")
            #expect(retracted.stdout.contains(#""mode" : "service-extension""#), "\(retracted.stdout)")
            #expect(retracted.stdout.contains(#""text" : "Removed by a moderator""#), "\(retracted.stdout)")
            for device in devices {
                let pushes = stage.apns.inbox(device)
                #expect(pushes.count == 1 && String(decoding: pushes[0].body, as: UTF8.self).contains("Removed by a moderator"))
            }

            // Refused, naming the flag; the app as it was.
            let before = try await stage.store { store in try await store.app(named: "chat") }
            for (arguments, status, named) in [
                (["--retraction-text", ""], 2, "--retraction-text"), (["--key-id", "short"], 2, "--key-id"),
                (["--endpoint", "http://127.0.0.1:1"], 2, "--endpoint"), (["--key-path", "/no/such/key.p8"], 8, "/no/such/key.p8"),
            ] {
                let refused = try stage.retract(["apps", "update", "chat"] + arguments)
                #expect(refused.status == status && refused.stderr.contains(named), "\(arguments): \(refused)")
            }
            let nothing = try stage.retract(["apps", "update", "chat"])
            #expect(nothing.status == 2 && nothing.stderr.contains("nothing to change"), "\(nothing)")
            let unknown = try stage.retract(["apps", "update", "shop", "--retraction-mode", "replace"])
            #expect(unknown.status == 6, "\(unknown)")
            #expect(try await stage.store { store in try await store.app(named: "chat") } == before)
        }
    }
}
