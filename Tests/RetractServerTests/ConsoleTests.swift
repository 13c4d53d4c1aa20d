import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// The console through real HTTP: sessions held by the ledger, the form
/// token, scopes and apps enforced on every form whatever the page showed.
/// (Tests/Browser/console_test.py drives the same pages in Chromium.)
@Suite("Moderation console")
struct ConsoleTests {
    /// A session for the key named `name`, made as sign-in makes one; the cookie header and the form token.
    static func session(
        _ stage: APIStage, keyName name: String, expiresIn seconds: TimeInterval = 3600
    ) async throws -> (
        cookie: String, formToken: String
    ) {
        let key = try #require(try await stage.store.apiKeys().first { $0.name == name })
        let id = ConsoleSessions.randomSecret()
        let token = ConsoleSessions.randomSecret()
        try await stage.store.createConsoleSession(
            idHash: ConsoleSessions.hash(id), keyID: key.id, formToken: token, expiresAt: Date().addingTimeInterval(seconds))
        return ("\(ConsoleSessions.cookieName(plainHTTP: false))=\(id)", token)
    }

    static func form(_ fields: [String: String]) -> String {
        fields.map { "\(Console.percentEncoded($0.key))=\(Console.percentEncoded($0.value))" }.joined(separator: "&")
    }

    static func post(_ stage: APIStage, _ path: String, cookie: String, _ fields: [String: String]) async throws -> HTTPAnswer {
        try await stage.http.call(
            "POST", path, body: form(fields), contentType: "application/x-www-form-urlencoded", headers: ["Cookie": cookie])
    }

    @Test func aSignedInModeratorDryRunsThenRetractsAndTheFormsAreGuarded() async throws {
        try await APIStage.with { stage in
            let backend = try await stage.chatKey()
            _ = try await stage.key([.read, .retract], apps: [stage.chat], name: "moderator")
            _ = try await stage.key([.read], apps: [stage.chat], name: "viewer")
            let tokens = TestTokens.tokens(0..<20)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: backend, body: #"{"app":"chat","reference":"m-1","tokens":\#(APIStage.hex(tokens))}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let moderator = try await Self.session(stage, keyName: "moderator")
            let fields = ["csrf": moderator.formToken, "app": "chat", "reference": "m-1", "reason": "posted by mistake <b>", "mode": ""]

            // Without a session: sent to sign in; with one, the page shows the notification.
            let anonymous = try await stage.http.call("GET", "/console/notification?app=chat&reference=m-1")
            #expect(anonymous.status == 200 && anonymous.text.contains("name=\"key\""), "\(anonymous)")
            let page = try await stage.http.call(
                "GET", "/console/notification?app=chat&reference=m-1", headers: ["Cookie": moderator.cookie])
            #expect(page.status == 200 && page.text.contains(#"<dd id="device-count">20</dd>"#), "\(page)")
            #expect(page.text.contains(#"id="dry-run""#))
            #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)

            // The dry run counts and writes no work; the reason is escaped on the confirm page.
            let dryRun = try await Self.post(stage, "/console/dry-run", cookie: moderator.cookie, fields)
            #expect(dryRun.status == 200 && dryRun.text.contains(#"<strong id="dry-run-devices">20</strong>"#), "\(dryRun)")
            #expect(dryRun.text.contains("posted by mistake &lt;b&gt;") && !dryRun.text.contains("mistake <b>"))
            // Its confirm form carries the session's token.
            #expect(dryRun.text.contains(#"name="csrf" value="\#(moderator.formToken)""#))
            #expect(try await stage.count("SELECT count(*) FROM work_items") == 0)

            // A stale or missing form token, a key without retract: 403, nothing written.
            var stale = fields
            stale["csrf"] = ConsoleSessions.randomSecret()
            #expect(try await Self.post(stage, "/console/retract", cookie: moderator.cookie, stale).status == 403)
            stale["csrf"] = nil
            #expect(try await Self.post(stage, "/console/retract", cookie: moderator.cookie, stale).status == 403)
            let viewer = try await Self.session(stage, keyName: "viewer")
            var viewerFields = fields
            viewerFields["csrf"] = viewer.formToken
            let refused = try await Self.post(stage, "/console/retract", cookie: viewer.cookie, viewerFields)
            #expect(refused.status == 403 && refused.text.contains("retract scope"), "\(refused)")
            let viewerPage = try await stage.http.call(
                "GET", "/console/notification?app=chat&reference=m-1", headers: ["Cookie": viewer.cookie])
            #expect(!viewerPage.text.contains(#"id="dry-run""#) && viewerPage.text.contains(#"id="no-retract""#))
            // A reason is required.
            var noReason = fields
            noReason["reason"] = "  "
            let unreasoned = try await Self.post(stage, "/console/retract", cookie: moderator.cookie, noReason)
            #expect(unreasoned.status == 422 && unreasoned.text.contains("a reason is required"), "\(unreasoned)")
            #expect(try await stage.count("SELECT count(*) FROM retractions WHERE NOT dry_run") == 0)

            // Confirmed: the retraction runs, its page and its events report it to the end.
            let retracted = try await Self.post(stage, "/console/retract", cookie: moderator.cookie, fields)
            #expect(retracted.status == 200 && retracted.text.contains("Retraction <code>"), "\(retracted)")
            let id = try #require(try await stage.store.auditLog(limit: 1).first?.subject)
            let events = try await stage.http.call("GET", "/console/retractions/\(id)/events", headers: ["Cookie": moderator.cookie])
            #expect(events.header("Content-Type") == "text/event-stream")
            let last = try #require(events.text.components(separatedBy: "\n").last { $0.hasPrefix("data: ") })
            let progress = try #require(try JSONSerialization.jsonObject(with: Data(last.dropFirst(6).utf8)) as? [String: Any])
            #expect(progress["finished"] as? Bool == true && progress["sent"] as? Int == 20 && progress["state"] as? String == "done")
            for token in tokens { #expect(stage.apns.inbox(token).count == 1) }
            let audit = try #require(try await stage.store.auditLog(limit: 1).first)
            #expect(audit.actor.contains("moderator") && audit.details["reason"] == "posted by mistake <b>")
        }
    }

    @Test func aRevokedKeyOrAnExpiredSessionIsSignedOutAndAnotherAppIsNotFound() async throws {
        try await APIStage.with { stage in
            let other = try await stage.store.registerApp(stage.apns.registration(name: "other"), actor: "test")
            _ = try await stage.key([.read, .retract], apps: [stage.chat], name: "moderator")
            _ = try await stage.key([.read, .retract], apps: [other], name: "expired")
            let moderator = try await Self.session(stage, keyName: "moderator")
            let expired = try await Self.session(stage, keyName: "expired", expiresIn: -1)

            let foreign = try await stage.http.call(
                "GET", "/console/notification?app=other&reference=x", headers: ["Cookie": moderator.cookie])
            #expect(foreign.status == 404, "\(foreign)")

            // The list shows the last day unless "Sent after" is cleared.
            let backend = try await stage.chatKey()
            let old = Date().addingTimeInterval(-2 * 86_400).formatted(.iso8601)
            for (reference, sentAt) in [("old-one", #","sentAt":"\#(old)""#), ("new-one", "")] {
                let body = #"{"app":"chat","reference":"\#(reference)","tokens":["aa"]\#(sentAt)}"#
                #expect(try await stage.call("POST", "/v1/deliveries", key: backend, body: body).status == 201)
            }
            let recent = try await stage.http.call("GET", "/console/notifications", headers: ["Cookie": moderator.cookie])
            #expect(recent.text.contains(">new-one<") && !recent.text.contains(">old-one<"), "\(recent)")
            let anyTime = try await stage.http.call("GET", "/console/notifications?sentAfter=", headers: ["Cookie": moderator.cookie])
            #expect(anyTime.text.contains(">new-one<") && anyTime.text.contains(">old-one<"), "\(anyTime)")
            let gone = try await stage.http.call("GET", "/console/notifications", headers: ["Cookie": expired.cookie])
            #expect(gone.text.contains("name=\"key\""), "an expired session still shows pages")
            // Expired sessions are deleted (by the server's maintenance pass, or here); the live one stays.
            try await stage.store.deleteExpiredConsoleSessions()
            #expect(try await stage.count("SELECT count(*) FROM console_sessions") == 1)

            let id = try #require(try await stage.store.apiKeys().first { $0.name == "moderator" }?.id)
            try await stage.store.revokeAPIKey(id: id, actor: "test")
            let revoked = try await stage.http.call("GET", "/console/notifications", headers: ["Cookie": moderator.cookie])
            #expect(revoked.text.contains("name=\"key\""), "a revoked key's session still shows pages")
            let posted = try await Self.post(
                stage, "/console/retract", cookie: moderator.cookie,
                ["csrf": moderator.formToken, "app": "chat", "reference": "r", "reason": "x"])
            #expect(posted.status == 401)
        }
    }

    /// Signs `key` in as a browser does, over a plain socket so that the 303's `Set-Cookie` is seen; the answer's head.
    static func signInHead(_ stage: APIStage, key: String) async throws -> String {
        let page = try await stage.http.call("GET", "/console/sign-in")
        let cookie = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let token = try #require(page.text.firstMatch(of: /name="csrf" value="([^"]+)"/)?.output.1)
        let body = form(["csrf": String(token), "key": key, "next": "/console/audit"])
        let socket = try LoopbackSocket(port: stage.http.baseURL.port ?? 0)
        defer { socket.close() }
        try socket.send(
            "POST /console/sign-in HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(cookie)\r\n"
                + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        guard case .bytes(let bytes) = socket.receive() else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func cookiesAreHostOnlyAndSecureTokensAreMaskedAndWebhookQueriesHidden() async throws {
        try await APIStage.with { stage in
            let viewer = try await stage.key([.read], apps: [stage.chat], name: "viewer")
            let admin = try await stage.key([.admin], apps: [stage.chat], name: "operator")
            // The session cookie: __Host-, Secure, the whole host, whatever the request came over.
            let head = try await Self.signInHead(stage, key: viewer)
            #expect(head.hasPrefix("HTTP/1.1 303"), "\(head)")
            let session = try #require(
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: __host-retract_console=") })
            #expect(
                session.contains("; Path=/;") && session.hasSuffix("; Secure") && session.contains("HttpOnly")
                    && !session.contains("Domain"))
            let page = try await stage.http.call("GET", "/console/sign-in")
            #expect(page.header("X-Frame-Options") == "DENY")
            #expect(page.header("Set-Cookie")?.hasPrefix("__Host-retract_console_signin=") == true)

            // Tokens: a read key sees their ends, an admin key all of them.
            let tokens = TestTokens.tokens(0..<3)
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: try await stage.chatKey(),
                body: #"{"app":"chat","reference":"m-1","tokens":\#(APIStage.hex(tokens))}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let viewerSession = try await Self.session(stage, keyName: "viewer")
            let masked = try await stage.http.call(
                "GET", "/console/notification?app=chat&reference=m-1", headers: ["Cookie": viewerSession.cookie])
            let shown = masked.text.matches(of: /<code class="token">([^<]+)<\/code>/).map { String($0.output.1) }
            #expect(shown == tokens.map { "\($0.hex.prefix(6))…\($0.hex.suffix(4))" }, "\(shown)")
            #expect(!tokens.contains { masked.text.contains($0.hex) })
            let adminSession = try await Self.session(stage, keyName: "operator")
            let whole = try await stage.http.call(
                "GET", "/console/notification?app=chat&reference=m-1", headers: ["Cookie": adminSession.cookie])
            #expect(tokens.allSatisfy { whole.text.contains($0.hex) })

            // A webhook URL's query and user are not shown to readers of the audit log.
            _ = try await stage.store.setWebhook(
                appID: stage.chat.id, url: "https://hooks.example.com/retract?token=s3cret", secret: String(repeating: "x", count: 40),
                actor: "test")
            let audit = try await stage.call("GET", "/v1/audit?app=chat&action=webhook.set", key: viewer)
            let details = (audit.json?["entries"] as? [[String: Any]])?.first?["details"] as? [String: String]
            #expect(details?["url"] == "https://hooks.example.com/…", "\(audit)")
            #expect(!audit.text.contains("s3cret"))
            _ = admin
        }
        // For development over plain HTTP from another machine, and only then: no prefix, no Secure.
        var settings = APIStage.defaultSettings
        settings.consolePlainHTTP = true
        try await APIStage.with(settings: settings) { stage in
            let viewer = try await stage.key([.read], apps: [stage.chat], name: "viewer")
            let head = try await Self.signInHead(stage, key: viewer)
            let session = try #require(
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie: retract_console_plain=") })
            #expect(!session.contains("Secure"), "\(session)")
        }
    }

    @Test func formsNextLinksAndProgressArePlainValues() throws {
        #expect(Console.parseForm("a=1&b=x+y%26z&c&d=") == ["a": "1", "b": "x y&z", "c": "", "d": ""])
        #expect(Console.safeNext("/console/audit?app=chat") == "/console/audit?app=chat")
        for bad in ["https://evil.example/", "//evil.example/console/", "/consolex", "/console/\\evil", "/console/a\nb", nil] {
            #expect(Console.safeNext(bad) == "/console/notifications", "\(bad ?? "nil")")
        }
        #expect(ConsoleTime.parseInput("2026-11-26T13:45") == Date(timeIntervalSince1970: 1_795_700_700))
        #expect(ConsoleTime.inputValue(Date(timeIntervalSince1970: 1_795_700_700)) == "2026-11-26T13:45")
        #expect(ConsoleTime.parseInput("yesterday") == nil)

        let start = Date(timeIntervalSince1970: 1_795_700_700)
        let running = ConsoleProgress(
            state: .sending, counts: RetractionCounts(total: 1000, sent: 300, dead: 50, failed: 50), dryRun: false, createdAt: start,
            startedAt: start, finishedAt: nil, failure: nil, waitingReason: nil, failures: ["BadDeviceToken": 10, "timeout": 40],
            now: start + 4)
        #expect(running.settled == 400 && running.pending == 600 && !running.finished)
        #expect(running.rate == 100 && running.etaSeconds == 6 && running.etaText == "6 s")
        #expect(running.failures.map(\.reason) == ["timeout", "BadDeviceToken"])
        let done = ConsoleProgress(
            state: .done, counts: RetractionCounts(total: 1000, sent: 900, dead: 50, failed: 50), dryRun: false, createdAt: start,
            startedAt: start, finishedAt: start + 10, failure: nil, waitingReason: nil, failures: [:], now: start + 60)
        #expect(done.finished && done.rate == 100 && done.etaText == "done" && done.line.hasPrefix("Finished: 900 sent"))
    }
}
