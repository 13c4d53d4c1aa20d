import APNsSimulator
import Foundation
import PostgresNIO
import RetractDevSupport
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// `retract serve` as an operator runs it: its own process, stopped with
/// SIGTERM, its database going away and coming back.
@Suite("retract serve")
struct ServeCommandTests {
    /// Creates a key with `retract keys create` and returns it (the last line of stdout).
    static func createKey(_ stage: EndToEndTests.Stage, app: String, scopes: String) throws -> String {
        let made = try stage.retract(["keys", "create", "--app", app, "--scopes", scopes, "--name", "tests"])
        try #require(made.status == 0, "\(made.stderr)")
        return String(made.stdout.split(separator: "\n").last ?? "")
    }

    static func count(_ sql: String, url: DatabaseURL) async throws -> Int {
        try await RetractStore.withStore(url: url, maximumConnections: 1, logger: TestDatabase.logger) { store in
            var value = 0
            for try await row in try await store.client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(Int.self) {
                value = row
            }
            return value
        }
    }

    static func waitUntil(timeout: Duration, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { throw CLIError("the condition did not hold within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func aServerStoppedWithSIGTERMMidRetractionLosesNothingAndANewServerFinishesIt() async throws {
        // 50 ms an answer and 10 pushes in flight: the first server needs about 8 s for 1,500 devices.
        try await EndToEndTests.withStage(faults: APNsSimulatorFaults(latency: .milliseconds(50))) { stage in
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<1500)
            try stage.record("spring-sale", app: "chat", tokens: devices)
            let key = try Self.createKey(stage, app: "chat", scopes: "retract,read")
            let environment = ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath]
            let first = try await ServeProcess.start(
                ["--window", "10", "--drain-timeout", "2", "--log-level", "info"], environment: environment)
            let made = try await first.http.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["spring-sale"]}"#)
            #expect(made.status == 202, "\(made)")
            let id = try #require(made.json?["id"] as? String)
            // The ledger counts a page when it is finished; the simulator sees each push.
            try await Self.waitUntil(timeout: .seconds(60)) { devices.filter { !stage.apns.inbox($0).isEmpty }.count >= 100 }

            let started = ContinuousClock.now
            #expect(try await first.stop() == 0, "\(first.log.suffix(3000))")
            // Two seconds of drain, then the items in hand go back to the queue.
            #expect(ContinuousClock.now - started < .seconds(15))
            let sentByFirst = try await Self.count("SELECT sent FROM retractions", url: stage.url)
            #expect(sentByFirst < devices.count, "the first server should have been stopped mid-way: \(first.log.suffix(4000))")
            #expect(try await Self.count("SELECT count(*) FROM work_items WHERE claim IS NOT NULL", url: stage.url) == 0)
            #expect(try await Self.count("SELECT count(*) FROM work_items", url: stage.url) > 0)

            let second = try await ServeProcess.start(["--log-level", "warning"], environment: environment)
            let done = try await second.http.poll("/v1/retractions/\(id)", key: key, timeout: .seconds(120)) {
                ($0.json?["state"] as? String) == "done"
            }
            #expect(done.json?["total"] as? Int == devices.count)
            #expect(done.json?["sent"] as? Int == devices.count)
            #expect(done.json?["failed"] as? Int == 0)
            var pushes = 0
            for device in devices {
                let inbox = stage.apns.inbox(device)
                #expect(!inbox.isEmpty, "device \(device.hex) got no removal push")
                pushes += inbox.count
            }
            // Devices sent to in the released items get a second push; at most lanes × page size of them.
            #expect(pushes - devices.count <= 4 * 500)
            #expect(try await second.stop() == 0)
        }
    }

    @Test func whileTheDatabaseIsDownTheAPIAnswers503AndThenRecoversWithNoRetractionLost() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        try await SimulatedAPNs.with(faults: APNsSimulatorFaults(latency: .milliseconds(20))) { apns in
            let url = try DatabaseURL(postgres.url)
            let stage = EndToEndTests.Stage(apns: apns, url: url)
            #expect(try stage.retract(["migrate"]).status == 0)
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<600)
            try stage.record("broadcast", app: "chat", tokens: devices)
            let key = try Self.createKey(stage, app: "chat", scopes: "retract,read")
            let server = try await ServeProcess.start(
                ["--window", "5", "--lease", "3", "--log-level", "warning"],
                environment: ["DATABASE_URL": url.withPassword, "APNS_CA_FILE": apns.caPath])
            let made = try await server.http.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["broadcast"]}"#)
            #expect(made.status == 202, "\(made)")
            let id = try #require(made.json?["id"] as? String)
            try await Self.waitUntil(timeout: .seconds(60)) { devices.contains { !apns.inbox($0).isEmpty } }

            try postgres.pause()
            let unavailable = try await server.http.poll("/v1/retractions/\(id)", key: key, timeout: .seconds(30)) { $0.status == 503 }
            #expect(unavailable.problem == "database-unavailable")
            #expect(unavailable.header("Retry-After").flatMap(Int.init) != nil)
            let refused = try await server.http.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["other"]}"#)
            #expect(refused.status == 503)
            #expect(try await server.http.call("GET", "/healthz").status == 200)
            #expect(try await server.http.call("GET", "/readyz").status == 503)
            try await Task.sleep(for: .seconds(2))

            try postgres.resume()
            _ = try await server.http.poll("/readyz", timeout: .seconds(60)) { $0.status == 200 }
            let done = try await server.http.poll("/v1/retractions/\(id)", key: key, timeout: .seconds(120)) {
                ($0.json?["state"] as? String) == "done"
            }
            #expect(done.json?["sent"] as? Int == devices.count, "\(done)")
            for device in devices { #expect(!apns.inbox(device).isEmpty, "device \(device.hex) got no removal push") }
            // The refused request wrote nothing: one retraction in the ledger.
            #expect(try await Self.count("SELECT count(*) FROM retractions", url: url) == 1)
            let metrics = try await server.http.call("GET", "/metrics")
            #expect(metrics.text.contains("retract_database_up 1"))
            #expect(metrics.text.contains(#"apns_pushes_total{status="200"}"#))
            #expect(try await server.stop() == 0, "\(server.log.suffix(3000))")
        }
    }

    /// After a failover the database's address may reach a standby: reads
    /// are served, writes answer 503 naming why, `/readyz` says so, and the
    /// workers claim nothing (no write is attempted). Promoted, it is a
    /// primary: the retraction queued before is sent to every device.
    @Test func onAStandbyWritesAreRefusedAndNothingIsClaimedUntilItIsPromoted() async throws {
        let primary = try ThrowawayPostgres.start()
        defer { primary.stop() }
        try await SimulatedAPNs.with { apns in
            let stage = EndToEndTests.Stage(apns: apns, url: try DatabaseURL(primary.url))
            #expect(try stage.retract(["migrate"]).status == 0)
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<20)
            try stage.record("broadcast", app: "chat", tokens: devices)
            let key = try Self.createKey(stage, app: "chat", scopes: "retract,read")
            let queued = try stage.retract(["notification", "broadcast", "--app", "chat", "--no-wait", "--json"])
            #expect(queued.status == 0, "\(queued.stderr)")
            let id = try #require((try JSONSerialization.jsonObject(with: Data(queued.stdout.utf8)) as? [String: Any])?["id"] as? String)

            let standby = try primary.startStandby()
            defer { standby.stop() }
            let url = try DatabaseURL(standby.url)
            // The standby has replayed the retraction.
            let replayed = ContinuousClock.now + .seconds(30)
            while try await Self.count("SELECT count(*) FROM retractions WHERE state = 'queued'", url: url) != 1 {
                guard ContinuousClock.now < replayed else { throw CLIError("the standby did not replay the retraction within 30 s") }
                try await Task.sleep(for: .milliseconds(100))
            }
            let server = try await ServeProcess.start(
                ["--log-level", "info"], environment: ["DATABASE_URL": url.withPassword, "APNS_CA_FILE": apns.caPath])
            let ready = try await server.http.poll("/readyz", timeout: .seconds(30)) { $0.status == 503 }
            #expect(ready.text.contains("standby"), "\(ready)")
            // Reads are served; a write is refused at once, naming why.
            let status = try await server.http.call("GET", "/v1/retractions/\(id)", key: key)
            #expect(status.status == 200 && status.json?["state"] as? String == "queued", "\(status)")
            let refused = try await server.http.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["broadcast"]}"#)
            #expect(refused.status == 503 && refused.problem == "database-unavailable", "\(refused)")
            #expect(refused.text.contains("standby"), "\(refused)")
            try await Task.sleep(for: .seconds(2))
            #expect(devices.allSatisfy { apns.inbox($0).isEmpty })
            #expect(!server.log.contains("read-only transaction"), "\(server.log.suffix(3000))")
            #expect(server.log.contains("the database takes no writes"), "\(server.log.suffix(3000))")

            // The failover: the old primary is gone, the standby promoted; the address now reaches a primary.
            primary.stop()
            try standby.promote()
            _ = try await server.http.poll("/readyz", timeout: .seconds(60)) { $0.status == 200 }
            let done = try await server.http.poll("/v1/retractions/\(id)", key: key, timeout: .seconds(120)) {
                ($0.json?["state"] as? String) == "done"
            }
            #expect(done.json?["sent"] as? Int == devices.count, "\(done)")
            for device in devices { #expect(!apns.inbox(device).isEmpty, "device \(device.hex) got no removal push") }
            #expect(try await server.stop() == 0, "\(server.log.suffix(3000))")
        }
    }

    @Test func keysAreCreatedListedAndRevokedFromTheCommandLine() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let created = try stage.retract([
                "keys", "create", "--app", "chat", "--scopes", "record,retract", "--name", "backend", "--json",
            ])
            #expect(created.status == 0, "\(created.stderr)")
            let made = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any]
            let id = try #require(made?["id"] as? String)
            #expect((made?["key"] as? String)?.hasPrefix("rk_") == true)
            #expect(made?["scopes"] as? [String] == ["record", "retract"])

            let listed = try stage.retract(["keys", "list"])
            #expect(listed.stdout.contains("\(id)\tbackend\trecord,retract\tchat\tactive"), "\(listed.stdout)")
            #expect(!listed.stdout.contains("rk_"))

            #expect(try stage.retract(["keys", "revoke", id]).status == 0)
            #expect(try stage.retract(["keys", "list"]).stdout.contains("\tchat\trevoked"))
            #expect(try stage.retract(["keys", "revoke", id]).status == 7)

            let badScope = try stage.retract(["keys", "create", "--app", "chat", "--scopes", "everything"])
            #expect(badScope.status == 2)
            #expect(
                badScope.stderr
                    == "retract keys create: --scopes: \"everything\" is not a scope (admin, record, send, retract, read, client, approve)\n"
            )
            #expect(try stage.retract(["keys", "create", "--app", "nope", "--scopes", "read"]).status == 6)
            #expect(try stage.retract(["keys", "create", "--scopes", "read"]).status == 2)
            #expect(try stage.retract(["keys", "create", "--scopes", "admin"]).status == 0)
        }
    }

    @Test func badServeFlagsAndAnUnreachableDatabaseExitWithTheirCodes() throws {
        let badMode = try RetractCLI.run(["serve", "--mode", "both", "--database-url", "postgres://u@127.0.0.1:1/db"])
        #expect(badMode.status == 2)
        #expect(badMode.stderr == "retract serve: --mode both: all, api or workers\n")
        let badPort = try RetractCLI.run(["serve", "--database-url", "postgres://u@127.0.0.1:1/db"], environment: ["RETRACT_PORT": "http"])
        #expect(badPort.status == 2)
        #expect(badPort.stderr == "retract serve: RETRACT_PORT=http: not a number\n")
        let unreachable = try RetractCLI.run(["serve", "--port", "0", "--database-url", "postgres://u@127.0.0.1:1/db"])
        #expect(unreachable.status == 4, "\(unreachable.stderr)")
    }
}
