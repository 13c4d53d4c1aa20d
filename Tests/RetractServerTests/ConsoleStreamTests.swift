import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// The console's live progress (server-sent events) through real sockets:
/// a stream stops reading when its browser leaves, ends at sign-out and
/// revocation, is capped per session, and all streams of one retraction
/// share one status read.
@Suite("Console live progress")
struct ConsoleStreamTests {
    /// An event stream as a browser holds it: a connection that stays open until closed.
    struct EventStream {
        let socket: LoopbackSocket

        /// Opens `GET path` with `cookie`.
        init(port: Int, path: String, cookie: String) throws {
            socket = try LoopbackSocket(port: port)
            try socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(cookie)\r\nAccept: text/event-stream\r\n\r\n")
        }

        /// What arrives until `done` holds of all read so far, the connection closes, or 5 s pass without a byte.
        func read(until done: (String) -> Bool) -> String {
            var text = ""
            while !done(text), case .bytes(let bytes) = socket.receive() { text += String(decoding: bytes, as: UTF8.self) }
            return text
        }

        /// Whether the server ended the response within `seconds`: it closed the connection, or sent the last chunk.
        func ends(within seconds: Int) -> Bool {
            socket.setReceiveTimeout(seconds: seconds)
            while true {
                switch socket.receive() {
                case .closed: return true
                case .timedOut: return false
                case .bytes(let bytes): if String(decoding: bytes, as: UTF8.self).hasSuffix("0\r\n\r\n") { return true }
                }
            }
        }

        func close() { socket.close() }
    }

    /// `retract_console_progress_reads_total` on `/metrics`.
    static func reads(_ stage: APIStage) async throws -> Int {
        let metrics = try await stage.call("GET", "/metrics")
        let line = metrics.text.split(separator: "\n").first { $0.hasPrefix("retract_console_progress_reads_total") }
        return Int(Double(line?.split(separator: " ").last ?? "") ?? -1)
    }

    @Test func streamsStopWithTheirBrowserShareOneReadAndEndWithTheSession() async throws {
        // The API alone: nothing sends, so the retraction stays queued and its streams stay open.
        var settings = APIStage.defaultSettings
        settings.mode = .api
        try await APIStage.with(settings: settings) { stage in
            let backend = try await stage.chatKey()
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: backend, body: #"{"app":"chat","reference":"m-1","tokens":["aa","bb"]}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let made = try await stage.call("POST", "/v1/retractions", key: backend, body: #"{"app":"chat","references":["m-1"]}"#)
            let id = try #require(made.json?["id"] as? String)
            let path = "/console/retractions/\(id)/events"
            for name in ["m1", "m2", "m3", "m4", "m5", "other"] { _ = try await stage.key([.read], apps: [stage.chat], name: name) }
            var sessions: [(cookie: String, formToken: String)] = []
            for name in ["m1", "m2", "m3", "m4", "m5"] { sessions.append(try await ConsoleTests.session(stage, keyName: name)) }
            let port = stage.http.baseURL.port ?? 0
            #expect(try await Self.reads(stage) == 0, "nothing is read while no stream is open")

            // Twenty browsers, four per session, on one retraction: each gets the progress.
            var streams: [EventStream] = []
            for session in sessions {
                for _ in 0..<4 {
                    let stream = try EventStream(port: port, path: path, cookie: session.cookie)
                    #expect(stream.read { $0.contains(#""finished""#) }.contains(#""state":"queued""#))
                    streams.append(stream)
                }
            }
            // A fifth stream of one session is refused.
            let fifth = try EventStream(port: port, path: path, cookie: sessions[0].cookie)
            let refused = fifth.read { $0.contains("</html>") }
            #expect(refused.hasPrefix("HTTP/1.1 429") && refused.contains("Retry-After"), "\(refused.prefix(300))")
            fifth.close()

            // All twenty share one read a tick: two seconds make a handful of reads, not eighty.
            let before = try await Self.reads(stage)
            try await Task.sleep(for: .seconds(2))
            let shared = try await Self.reads(stage) - before
            #expect((1...7).contains(shared), "\(shared) status reads in 2 s for 20 streams of one retraction")

            // They leave at once: within 2 s nothing is read any more.
            for stream in streams { stream.close() }
            try await Task.sleep(for: .seconds(2))
            let settled = try await Self.reads(stage)
            try await Task.sleep(for: .seconds(2))
            #expect(try await Self.reads(stage) == settled, "status reads went on after every browser left")

            // Signing out ends that session's streams at once; a revoked key's, within seconds.
            let signedOut = try EventStream(port: port, path: path, cookie: sessions[1].cookie)
            _ = signedOut.read { $0.contains(#""finished""#) }
            let other = try await ConsoleTests.session(stage, keyName: "other")
            let revoked = try EventStream(port: port, path: path, cookie: other.cookie)
            _ = revoked.read { $0.contains(#""finished""#) }
            let out = try await ConsoleTests.post(stage, "/console/sign-out", cookie: sessions[1].cookie, ["csrf": sessions[1].formToken])
            #expect(out.status == 200, "\(out)")
            #expect(signedOut.ends(within: 1), "a stream went on after its session signed out")
            let otherID = try #require(try await stage.store.apiKeys().first { $0.name == "other" }?.id)
            try await stage.store.revokeAPIKey(id: otherID, actor: "test")
            #expect(revoked.ends(within: 4), "a stream went on after its key was revoked")
            signedOut.close()
            revoked.close()
        }
    }
}
