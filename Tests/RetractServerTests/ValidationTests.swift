import Foundation
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import Testing

/// Bad input: each body gets its problem type and names the field, and
/// nothing is written (checked in the ledger afterwards).
@Suite("API validation")
struct ValidationTests {
    struct Case: CustomStringConvertible {
        var method = "POST"
        var path: String
        var body: String?
        var contentType = "application/json"
        var headers: [String: String] = [:]
        var status: Int
        var problem: String
        var field: String?
        var description: String { "\(method) \(path) \(body?.prefix(80) ?? "")" }
    }

    static let token = String(repeating: "ab", count: 32)
    static let tokens = #"["\#(token)"]"#

    static var cases: [Case] {
        let deliveries = "/v1/deliveries"
        let retractions = "/v1/retractions"
        let notifications = "/v1/notifications"
        let apps = "/v1/apps"
        let old = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-40 * 86_400))
        let ahead = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3 * 86_400))
        let manyTokens = "[" + (0..<10_001).map { "\"\(String(format: "%08x", $0))\"" }.joined(separator: ",") + "]"
        let manyReferences = "[" + (0..<1001).map { "\"r\($0)\"" }.joined(separator: ",") + "]"
        let huge = String(repeating: "a", count: 1_200_000)
        let app = #""app":"chat""#
        let reads = "/v1/reads"
        let user = #""app":"chat","recipient":"u""#
        let now = ISO8601DateFormatter().string(from: Date())
        return [
            // The body's shape.
            Case(path: deliveries, body: "{", status: 400, problem: "invalid-json"),
            Case(path: deliveries, body: "42", status: 400, problem: "invalid-json"),
            Case(path: deliveries, body: #"{\#(app),"reference":"r"}"#, status: 400, problem: "invalid-json", field: "tokens"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":"ab"}"#, status: 400, problem: "invalid-json", field: "tokens"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":7,"tokens":\#(tokens)}"#, status: 400, problem: "invalid-json",
                field: "reference"),
            Case(path: deliveries, body: "[1]", status: 400, problem: "invalid-json", field: "[0]"),
            Case(
                path: deliveries, body: "text", contentType: "text/plain", status: 415, problem: "unsupported-media-type",
                field: "Content-Type"),
            Case(path: deliveries, body: #"{"pad":"\#(huge)"}"#, status: 413, problem: "payload-too-large"),
            // Field values.
            Case(path: deliveries, body: #"{\#(app),"reference":"r","tokens":[]}"#, status: 422, problem: "invalid-field", field: "tokens"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":["zz"]}"#, status: 422, problem: "invalid-field",
                field: "tokens[0]"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":["ab","abc"]}"#, status: 422, problem: "invalid-field",
                field: "tokens[1]"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":["\#(String(repeating: "ab", count: 513))"]}"#, status: 422,
                problem: "invalid-field", field: "tokens[0]"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"","tokens":\#(tokens)}"#, status: 422, problem: "invalid-field",
                field: "reference"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"\#(String(repeating: "x", count: 257))","tokens":\#(tokens)}"#, status: 422,
                problem: "invalid-field", field: "reference"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"a\nb","tokens":\#(tokens)}"#, status: 422, problem: "invalid-field",
                field: "reference"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"sentAt":"yesterday"}"#, status: 422,
                problem: "invalid-field",
                field: "sentAt"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"sentAt":"\#(old)"}"#, status: 422,
                problem: "invalid-field",
                field: "sentAt"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"sentAt":"\#(ahead)"}"#, status: 422,
                problem: "invalid-field",
                field: "sentAt"),
            Case(
                path: deliveries, body: #"{"app":"nope","reference":"r","tokens":\#(tokens)}"#, status: 404, problem: "not-found",
                field: "app"),
            Case(path: deliveries, body: "[]", status: 422, problem: "invalid-field"),
            // Bytes PostgreSQL cannot hold never reach it.
            Case(
                path: deliveries, body: #"{"app":"ch\u0000at","reference":"r","tokens":\#(tokens)}"#, status: 404, problem: "not-found",
                field: "app"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r\u0000","tokens":\#(tokens)}"#, status: 422, problem: "invalid-field",
                field: "reference"),
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"reason":"a\u0000b"}"#, status: 422, problem: "invalid-field",
                field: "reason"),
            Case(
                path: apps, body: #"{"name":"shop","topic":"com.example.sh\u0000op","environment":"sandbox","certificatePath":"/x.p12"}"#,
                status: 422,
                problem: "invalid-field", field: "topic"),
            Case(
                path: deliveries, body: #"[{\#(app),"reference":"ok","tokens":\#(tokens)},{\#(app),"reference":"r","tokens":["xx"]}]"#,
                status: 422,
                problem: "invalid-field", field: "[1].tokens[0]"),
            Case(path: deliveries, body: #"{\#(app),"reference":"r","tokens":\#(manyTokens)}"#, status: 422, problem: "invalid-field"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":\#(tokens)}"#,
                headers: ["Idempotency-Key": String(repeating: "k", count: 256)],
                status: 422, problem: "invalid-field", field: "Idempotency-Key"),
            Case(path: retractions, body: #"{\#(app),"references":[]}"#, status: 422, problem: "invalid-field", field: "references"),
            // Delivery modes.
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"mode":"loud"}"#, status: 422, problem: "invalid-field",
                field: "mode"),
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"badge":2}"#, status: 422, problem: "invalid-field", field: "badge"),
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"mode":"service-extension","badge":-1}"#, status: 422,
                problem: "invalid-field", field: "badge"),
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"mode":"replace"}"#, status: 422, problem: "invalid-field",
                field: "mode"),
            Case(
                path: deliveries,
                body: #"[{\#(app),"reference":"r","tokens":\#(tokens),"collapseId":"\#(String(repeating: "c", count: 65))"}]"#,
                status: 422, problem: "invalid-field", field: "[0].collapseId"),
            Case(
                path: deliveries, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"collapseId":""}"#, status: 422,
                problem: "invalid-field", field: "collapseId"),
            Case(
                path: apps,
                body:
                    #"{"name":"shop","topic":"com.example.shop","environment":"sandbox","certificatePath":"/x.p12","retractionMode":"loud"}"#,
                status: 422, problem: "invalid-field", field: "retractionMode"),
            Case(
                path: apps,
                body:
                    #"{"name":"shop","topic":"com.example.shop","environment":"sandbox","certificatePath":"/x.p12","retractionText":" "}"#,
                status: 422, problem: "invalid-field", field: "retractionText"),
            Case(
                path: retractions, body: #"{\#(app),"references":\#(manyReferences)}"#, status: 422, problem: "invalid-field",
                field: "references"),
            Case(
                path: retractions, body: #"{\#(app),"references":["ok",""]}"#, status: 422, problem: "invalid-field", field: "references[1]"
            ),
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"reason":"\#(String(repeating: "y", count: 1001))"}"#, status: 422,
                problem: "invalid-field", field: "reason"),
            Case(
                path: retractions, body: #"{\#(app),"references":["r"],"dryRun":"yes"}"#, status: 400, problem: "invalid-json",
                field: "dryRun"),
            Case(path: retractions, body: #"{"references":["r"]}"#, status: 400, problem: "invalid-json", field: "app"),
            // Reads (docs/reads.md): what a read is given, and what only a retraction takes, refused by name.
            Case(path: reads, body: #"{\#(app),"thread":"t","upTo":"\#(now)"}"#, status: 400, problem: "invalid-json", field: "recipient"),
            Case(path: reads, body: #"{\#(user),"thread":"t"}"#, status: 422, problem: "invalid-field", field: "upTo"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upTo":"\#(now)","upToReference":"r"}"#, status: 422,
                problem: "invalid-field", field: "upToReference"),
            Case(path: reads, body: #"{\#(user),"thread":"t","upTo":"yesterday"}"#, status: 422, problem: "invalid-field", field: "upTo"),
            Case(path: reads, body: #"{\#(user),"thread":"","upTo":"\#(now)"}"#, status: 422, problem: "invalid-field", field: "thread"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upTo":"\#(now)","badge":-1}"#, status: 422, problem: "invalid-field",
                field: "badge"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upTo":"\#(now)","badge":"3"}"#, status: 400, problem: "invalid-json",
                field: "badge"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upTo":"\#(now)","mode":"alert"}"#, status: 422, problem: "invalid-field",
                field: "mode"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upTo":"\#(now)","reason":"spam"}"#, status: 422, problem: "invalid-field",
                field: "reason"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upTo":"\#(now)","dryRun":true}"#, status: 422, problem: "invalid-field",
                field: "dryRun"),
            Case(
                path: reads, body: #"{\#(user),"thread":"t","upToReference":"never-sent"}"#, status: 404, problem: "not-found",
                field: "upToReference"),
            Case(
                path: reads, body: #"{"app":"nope","recipient":"u","thread":"t","upTo":"\#(now)"}"#, status: 404, problem: "not-found",
                field: "app"),
            Case(
                path: notifications, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"payload":"hi"}"#, status: 400,
                problem: "invalid-json",
                field: "payload"),
            Case(
                path: notifications, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"payload":{"alert":"hi"}}"#, status: 422,
                problem: "invalid-field", field: "payload.aps"),
            Case(
                path: notifications, body: #"{\#(app),"reference":"r","tokens":\#(tokens),"payload":{"aps":{}}}"#, status: 422,
                problem: "invalid-field", field: "payload"),
            Case(
                path: notifications,
                body:
                    #"{\#(app),"reference":"r","tokens":\#(tokens),"payload":{"aps":{"alert":"\#(String(repeating: "z", count: 5000))"}}}"#,
                status: 422, problem: "invalid-field", field: "payload"),
            Case(
                path: notifications,
                body:
                    #"{\#(app),"reference":"r","tokens":\#(tokens),"payload":{"aps":{"alert":"a"}},"collapseID":"\#(String(repeating: "c", count: 65))"}"#,
                status: 422, problem: "invalid-field", field: "collapseID"),
            // Without a collapse id of its own, a reference longer than APNs's 64 bytes is the collapse id at fault.
            Case(
                path: notifications,
                body: #"{\#(app),"reference":"\#(String(repeating: "r", count: 65))","tokens":\#(tokens),"payload":{"aps":{"alert":"a"}}}"#,
                status: 422, problem: "invalid-field", field: "reference"),
            // Found by scripts/fuzz-api: it used to hang, retried as a lost connection.
            Case(
                path: notifications,
                body: #"{\#(app),"reference":"r","tokens":\#(tokens),"payload":{"aps":{"alert":"a"}},"collapseID":"a\u0000b"}"#,
                status: 422, problem: "invalid-field", field: "collapseID"),
            Case(
                path: apps, body: #"{"name":"shop","topic":"com.example.shop","environment":"staging","certificatePath":"/x.p12"}"#,
                status: 422,
                problem: "invalid-field", field: "environment"),
            Case(
                path: apps, body: #"{"name":"Bad Name","topic":"t","environment":"sandbox","certificatePath":"/x.p12"}"#, status: 422,
                problem: "invalid-field", field: "name"),
            Case(
                path: apps,
                body: #"{"name":"shop","topic":"t","environment":"sandbox","keyID":"short","teamID":"TESTTEAM01","keyPath":"/k.p8"}"#,
                status: 422, problem: "invalid-field", field: "keyID"),
            Case(
                path: apps, body: #"{"name":"shop","topic":"t","environment":"sandbox","keyID":"TESTKEY001","teamID":"TESTTEAM01"}"#,
                status: 422,
                problem: "invalid-field", field: "keyPath"),
            Case(
                path: apps,
                body:
                    #"{"name":"shop","topic":"t","environment":"sandbox","keyID":"TESTKEY001","teamID":"TESTTEAM01","keyPath":"/no/such.p8"}"#,
                status: 422, problem: "app-credentials", field: "keyPath"),
            Case(method: "GET", path: "/v1/devices/zz/retractions", status: 422, problem: "invalid-field", field: "token"),
            Case(
                method: "GET", path: "/v1/devices/\(token)/retractions?since=garbage", status: 422, problem: "invalid-field", field: "since"
            ),
            Case(method: "GET", path: "/v1/devices/\(token)/retractions?limit=0", status: 422, problem: "invalid-field", field: "limit"),
            Case(method: "GET", path: "/v1/devices/\(token)/retractions?app=nope", status: 404, problem: "not-found", field: "app"),
            // A cursor of the right shape whose transaction is out of range.
            Case(
                method: "GET",
                path: "/v1/devices/\(token)/retractions?since=\(Self.cursor("v1.18446744073709551615.\(UUID().uuidString)"))",
                status: 422, problem: "invalid-field", field: "since"),
            Case(method: "GET", path: "/v1/devices/\(token)/retractions?app=%00", status: 404, problem: "not-found", field: "app"),
            Case(method: "DELETE", path: "/v1/retractions", status: 405, problem: "method-not-allowed"),
            Case(method: "GET", path: "/v2/retractions", status: 404, problem: "not-found"),
        ]
    }

    static func cursor(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test func everyBadRequestNamesItsProblemAndWritesNothing() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let admin = try await stage.key([.admin], apps: [], name: "ops")
            let before = try await Self.ledgerCounts(stage)
            for bad in Self.cases {
                let answer = try await stage.http.call(
                    bad.method, bad.path, key: bad.path == "/v1/apps" ? admin : key, body: bad.body, contentType: bad.contentType,
                    headers: bad.headers)
                #expect(answer.status == bad.status, "\(bad): \(answer)")
                #expect(answer.problem == bad.problem, "\(bad): \(answer)")
                #expect(answer.field == bad.field, "\(bad): \(answer)")
                #expect(answer.header("Content-Type") == "application/problem+json", "\(bad)")
                #expect((answer.json?["detail"] as? String)?.isEmpty == false, "\(bad)")
                #expect(answer.json?["requestId"] as? String == answer.header("X-Request-Id"), "\(bad)")
            }
            #expect(try await Self.ledgerCounts(stage) == before)
        }
    }

    /// Rows in every table a request could write to.
    static func ledgerCounts(_ stage: APIStage) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in [
            "apps", "deliveries", "retractions", "work_items", "audit_log", "idempotency_records", "dead_tokens", "device_feed", "read_marks",
        ] {
            counts[table] = try await stage.count("SELECT count(*) FROM \(table)")
        }
        return counts
    }
}
