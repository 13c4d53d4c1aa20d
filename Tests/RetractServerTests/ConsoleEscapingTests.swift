import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// Every value a console page prints is escaped scalar by scalar, whatever
/// grapheme cluster a `"` or `<` hides in: U+0600 before it, a combining
/// mark after it (swift-mustache's own escaping compares `Character`s and
/// let such clusters through: docs/security.md). Each input path is tried
/// over HTTP as a user would use it: a reflected `next`, labels recorded by
/// a `record` key, references, reasons, selectors, and the search form.
@Suite("Console escaping")
struct ConsoleEscapingTests {
    /// A mark that never occurs in the templates' own markup: a special next to it came from a value.
    static let prepended: Unicode.Scalar = "\u{0600}"
    static let combining: Unicode.Scalar = "\u{0301}"

    /// The reproductions of the review, and each of `& < > " '` hidden both ways, tagged to be found.
    static func hostile(_ tag: String) -> [String] {
        var values = [
            "\(tag)\u{0600}\"\u{0600}>\u{0600}<meta http-equiv=refresh content=0;url=https://evil.example/phish\u{0600}>",
            "\"\u{0600}<a href=https://evil.example/>\(tag)</a>",
        ]
        for special in ["&", "<", ">", "\"", "'"] {
            values.append("\(tag)\u{0600}\(special)\u{0600}x")
            values.append("\(tag)\(special)\u{0301}x")
        }
        return values
    }

    /// The specials in `html` that sit next to a mark unescaped: each a leak of a value.
    static func leaks(in html: String) -> [String] {
        let scalars = Array(html.unicodeScalars)
        let marks: Set<Unicode.Scalar> = [prepended, combining]
        let entities = ["amp;", "lt;", "gt;", "quot;", "#39;"]
        var found: [String] = []
        for (index, scalar) in scalars.enumerated() where "<>\"'&".unicodeScalars.contains(scalar) {
            let before = index > 0 ? scalars[index - 1] : nil
            let after = index + 1 < scalars.count ? scalars[index + 1] : nil
            let nextText = String(String.UnicodeScalarView(scalars[(index + 1)..<min(index + 6, scalars.count)]))
            // An escaped special, `&quot;`, may follow a U+0600 of its value; a raw `&` is not followed by an entity's name.
            let isEntity = scalar == "&" && entities.contains { nextText.hasPrefix($0) }
            if after.map(marks.contains) == true || (before.map(marks.contains) == true && !isEntity) {
                let from = max(0, index - 30)
                found.append(String(String.UnicodeScalarView(scalars[from..<min(index + 30, scalars.count)])))
            }
        }
        return found
    }

    /// `text` as an HTML page should print it: the test's own escaping, scalar by scalar.
    static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func expectNoLeak(
        _ answer: HTTPAnswer, _ page: String, showing values: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(answer.status < 500, "\(page): \(answer)", sourceLocation: sourceLocation)
        let leaks = Self.leaks(in: answer.text)
        #expect(leaks.isEmpty, "\(page) prints a value raw: \(leaks.prefix(3))", sourceLocation: sourceLocation)
        for value in values {
            // Compared as bytes: a U+0600 at a value's end joins the page's next character in one `Character`.
            #expect(
                answer.body.range(of: Data(escaped(value).utf8)) != nil, "\(page) does not show \(value.debugDescription)",
                sourceLocation: sourceLocation)
        }
    }

    @Test func noValueReachesAPageUnescaped() async throws {
        try await APIStage.with { stage in
            let recorder = try await stage.key([.record], apps: [stage.chat], name: "recorder")
            let retracter = try await stage.key([.retract, .read], apps: [stage.chat], name: "moderator")
            let moderator = try await ConsoleTests.session(stage, keyName: "moderator")
            let cookie = ["Cookie": moderator.cookie]

            // Reflected, without a session: the sign-in page's `next`.
            for value in Self.hostile("next") {
                let next = "/console/x" + value
                let page = try await stage.http.call("GET", "/console/sign-in?next=\(Console.percentEncoded(next))")
                Self.expectNoLeak(page, "sign-in with next \(value.debugDescription)", showing: [next])
            }

            // Stored by a key that may only record: references, threads and campaigns.
            let threads = Self.hostile("thread")
            let campaigns = Self.hostile("campaign")
            let references = Self.hostile("ref")
            for (index, reference) in references.enumerated() {
                let body = try JSONSerialization.data(withJSONObject: [
                    "app": "chat", "reference": reference, "tokens": [TestTokens.token(index).hex], "thread": threads[index],
                    "campaign": campaigns[index],
                ])
                let recorded = try await stage.call("POST", "/v1/deliveries", key: recorder, body: String(decoding: body, as: UTF8.self))
                #expect(recorded.status == 201, "\(recorded)")
            }
            // Reasons, and a selector, given by a key that may retract: dry runs, which send nothing.
            let reasons = Self.hostile("reason")
            var retractionIDs: [String] = []
            for (index, reason) in reasons.enumerated() {
                let body = try JSONSerialization.data(withJSONObject: [
                    "app": "chat", "references": [references[index]], "reason": reason, "dryRun": true,
                ])
                let made = try await stage.call("POST", "/v1/retractions", key: retracter, body: String(decoding: body, as: UTF8.self))
                #expect(made.status == 202, "\(made)")
                retractionIDs.append(try #require(made.json?["id"] as? String))
            }
            let selector = try JSONSerialization.data(withJSONObject: [
                "app": "chat", "thread": threads[0], "reason": reasons[1], "dryRun": true,
            ])
            let bySelector = try await stage.call(
                "POST", "/v1/retractions", key: retracter, body: String(decoding: selector, as: UTF8.self))
            #expect(bySelector.status == 202, "\(bySelector)")
            retractionIDs.append(try #require(bySelector.json?["id"] as? String))

            // The page every moderator lands on, and each notification's own page.
            let list = try await stage.http.call("GET", "/console/notifications?sentAfter=&limit=50", headers: cookie)
            Self.expectNoLeak(list, "the notification list", showing: references + threads + campaigns)
            for (index, reference) in references.enumerated() {
                let page = try await stage.http.call(
                    "GET", "/console/notification?app=chat&reference=\(Console.percentEncoded(reference))", headers: cookie)
                Self.expectNoLeak(page, "notification \(reference.debugDescription)", showing: [reference, threads[index], reasons[index]])
            }
            for (index, id) in retractionIDs.enumerated() {
                let page = try await stage.http.call("GET", "/console/retractions/\(id)", headers: cookie)
                Self.expectNoLeak(page, "retraction \(id)", showing: [reasons[index == reasons.count ? 1 : index]])
            }
            let audit = try await stage.http.call("GET", "/console/audit", headers: cookie)
            Self.expectNoLeak(audit, "the audit log", showing: reasons)

            // The search form echoes what was typed, and says what is wrong with it.
            for (index, value) in Self.hostile("filter").enumerated() {
                let query = ["reference", "thread", "campaign"].map { "\($0)=\(Console.percentEncoded(value))" }.joined(separator: "&")
                let searched = try await stage.http.call("GET", "/console/notifications?\(query)", headers: cookie)
                Self.expectNoLeak(searched, "a search for \(value.debugDescription)", showing: [value])
                let badTime = try await stage.http.call(
                    "GET", "/console/notifications?sentBefore=\(Console.percentEncoded(value))&n=\(index)", headers: cookie)
                Self.expectNoLeak(badTime, "a search sent before \(value.debugDescription)")
                let unknown = try await stage.http.call(
                    "GET", "/console/notification?app=chat&reference=\(Console.percentEncoded(value))", headers: cookie)
                Self.expectNoLeak(unknown, "an unknown reference \(value.debugDescription)")
            }

            // A reason typed into the retract form, on the confirm page.
            for (index, reason) in reasons.enumerated() {
                let confirm = try await ConsoleTests.post(
                    stage, "/console/dry-run", cookie: moderator.cookie,
                    ["csrf": moderator.formToken, "app": "chat", "reference": references[index], "reason": reason, "mode": ""])
                Self.expectNoLeak(confirm, "the confirm page with reason \(reason.debugDescription)", showing: [reason, references[index]])
            }
        }
    }

    @Test func escapingIsByScalarAndTemplatesCannotPrintRaw() throws {
        #expect(ConsoleHTML.escape("a\u{0600}\"b<\u{0301}&'>") == "a\u{0600}&quot;b&lt;\u{0301}&amp;&#39;&gt;")
        #expect(ConsoleHTML.escape("plain é 日本") == "plain é 日本")
        for source in ["<p>{{{value}}}</p>", "<p>{{&value}}</p>", "{{% CONTENT_TYPE: TEXT }}{{value}}", "{{=<% %>=}}<%value%>"] {
            #expect(throws: ConsoleHTML.TemplateProblem.self, "\(source)") { try ConsoleHTML.template(source, named: "test") }
        }
        // Templates made the one way print a hidden quote escaped, in a section and through the layout they extend.
        let pages = try ConsolePages(templates: [
            "layout": Array("<main>{{$content}}{{/content}}</main>".utf8),
            "page": Array("{{<layout}}{{$content}}<a title=\"{{title}}\">{{#items}}<i>{{.}}</i>{{/items}}</a>{{/content}}{{/layout}}".utf8),
        ])
        let html = pages.html("page", ["title": "x\u{0600}\"\u{0600}>", "items": ["<\u{0301}b"]])
        #expect(Data(html.utf8).range(of: Data("<a title=\"x\u{0600}&quot;\u{0600}&gt;\"><i>&lt;\u{0301}b</i></a>".utf8)) != nil, "\(html)")
        #expect(Self.leaks(in: html).isEmpty)
    }
}
