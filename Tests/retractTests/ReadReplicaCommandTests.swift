import Foundation
import RetractDevSupport
import RetractKit
import RetractStore
import RetractTestSupport
import Testing

/// `retract serve --read-database-url`: a real streaming replica (a hot
/// standby of a primary, `pg_basebackup`) serves the reads that may lag.
@Suite("A read replica", .serialized)
struct ReadReplicaCommandTests {
    /// The feed and a retraction's status come from the replica: while its
    /// replay is paused it answers what it had (a retraction still queued,
    /// "nothing new yet" for a device) and never a gap; a retraction it does
    /// not have yet is read from the primary, never answered as unknown. A
    /// device whose reads move between a server reading the primary and one
    /// reading the replica, while retractions are made and the replica
    /// falls behind and catches up, lists every retraction once.
    @Test func theFeedAndStatusAreReadFromTheReplicaAndADeviceNeverSkipsARetraction() async throws {
        let primary = try ThrowawayPostgres.start()
        defer { primary.stop() }
        try await SimulatedAPNs.with { apns in
            let stage = EndToEndTests.Stage(apns: apns, url: try DatabaseURL(primary.url))
            #expect(try stage.retract(["migrate"]).status == 0)
            try stage.addApp("chat")
            let device = TestTokens.token(1)
            let references = (0..<24).map { "m\($0)" }
            for reference in references { try stage.record(reference, app: "chat", tokens: [device, TestTokens.token(2)]) }
            let key = try ServeCommandTests.createKey(stage, app: "chat", scopes: "retract,read,client")
            let standby = try primary.startStandby()
            defer { standby.stop() }

            // Two API servers on one ledger, no workers: one reads the primary, one the replica.
            let environment = ["DATABASE_URL": primary.url, "APNS_CA_FILE": apns.caPath]
            let onPrimary = try await ServeProcess.start(["--mode", "api"], environment: environment)
            let onReplica = try await ServeProcess.start(
                ["--mode", "api", "--read-database-url", standby.url, "--log-level", "info"], environment: environment)
            #expect(onReplica.log.contains("reads that may lag go to the read database"), "\(onReplica.log.suffix(2000))")
            func retract(_ reference: String) async throws -> String {
                let made = try await onPrimary.http.call(
                    "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["\#(reference)"]}"#)
                try #require(made.status == 202, "\(made)")
                return try #require(made.json?["id"] as? String)
            }
            func feed(_ server: ServeProcess, since cursor: String?) async throws -> (ids: [String], cursor: String) {
                let since = cursor.map { "&since=\($0)" } ?? ""
                let answer = try await server.http.call("GET", "/v1/devices/\(device.hex)/retractions?app=chat&limit=5\(since)", key: key)
                try #require(answer.status == 200, "\(answer)")
                let listed = (answer.json?["retractions"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                return (listed, try #require(answer.json?["cursor"] as? String))
            }
            func state(_ server: ServeProcess, _ id: String) async throws -> String? {
                let answer = try await server.http.call("GET", "/v1/retractions/\(id)", key: key)
                #expect(answer.status == 200, "\(answer)")
                return answer.json?["state"] as? String
            }

            // A retraction queued, replayed by the standby; then its replay paused and workers started.
            let first = try await retract("m0")
            let replayed = ContinuousClock.now + .seconds(30)
            while try await ServeCommandTests.count("SELECT count(*) FROM retractions", url: try DatabaseURL(standby.url)) != 1 {
                guard ContinuousClock.now < replayed else { throw CLIError("the standby did not replay the retraction within 30 s") }
                try await Task.sleep(for: .milliseconds(100))
            }
            try standby.execute("SELECT pg_wal_replay_pause()")
            let workers = try await ServeProcess.start(["--mode", "workers"], environment: environment)
            _ = try await onPrimary.http.poll("/v1/retractions/\(first)", key: key) { $0.json?["state"] as? String == "done" }
            // The replica says what it had: still queued.
            #expect(try await state(onReplica, first) == "queued")
            // One made while it is paused: the primary lists it, the replica has nothing new yet, never a gap.
            let second = try await retract("m1")
            let read = try await feed(onPrimary, since: nil)
            #expect(read.ids == [first, second])
            let lagging = try await feed(onReplica, since: read.cursor)
            #expect(lagging.ids.isEmpty && lagging.cursor == read.cursor, "\(lagging)")
            #expect(try await feed(onReplica, since: nil).ids == [first])
            // The replica does not have it: its status comes from the primary.
            #expect(try await state(onReplica, second) != nil)

            // Resumed, it catches up.
            try standby.execute("SELECT pg_wal_replay_resume()")
            _ = try await onReplica.http.poll("/v1/retractions/\(first)", key: key, timeout: .seconds(30)) {
                $0.json?["state"] as? String == "done"
            }

            // Retractions made while a device's reads alternate between the two servers, the replica
            // paused and resumed every few of them: each is listed once, none skipped.
            var made = [first, second]
            var listed = read.ids
            var cursor: String? = read.cursor
            for (round, reference) in references.dropFirst(2).enumerated() {
                if round % 6 == 1 { try standby.execute("SELECT pg_wal_replay_pause()") }
                if round % 6 == 4 { try standby.execute("SELECT pg_wal_replay_resume()") }
                made.append(try await retract(reference))
                let page = try await feed(round.isMultiple(of: 2) ? onReplica : onPrimary, since: cursor)
                listed += page.ids
                cursor = page.cursor
            }
            try standby.execute("SELECT pg_wal_replay_resume()")
            // Caught up through either server, alternately.
            let deadline = ContinuousClock.now + .seconds(60)
            var round = 0
            while Set(listed) != Set(made) {
                guard ContinuousClock.now < deadline else { break }
                let page = try await feed(round.isMultiple(of: 2) ? onReplica : onPrimary, since: cursor)
                listed += page.ids
                cursor = page.cursor
                round += 1
                if page.ids.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(listed.count == Set(listed).count, "listed twice: \(listed)")
            #expect(Set(listed) == Set(made), "skipped: \(Set(made).subtracting(listed))")
            for server in [onPrimary, onReplica, workers] { #expect(try await server.stop() == 0, "\(server.log.suffix(3000))") }
        }
    }

    @Test func aMalformedReadDatabaseURLIsRefusedNamingTheFlag() throws {
        let refused = try RetractCLI.run(
            ["serve", "--read-database-url", "mysql://db/ledger"], environment: ["DATABASE_URL": "postgres://postgres@127.0.0.1:1/none"])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("--read-database-url (RETRACT_READ_DATABASE_URL): database URL"), "\(refused.stderr)")
        #expect(refused.stderr.contains("the scheme is mysql"), "\(refused.stderr)")
    }
}
