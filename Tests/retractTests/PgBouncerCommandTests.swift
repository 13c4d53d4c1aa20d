import Foundation
import RetractDevSupport
import RetractKit
import RetractStore
import RetractTestSupport
import Testing

/// `retract serve` behind Debian's PgBouncer: in transaction mode, or with
/// the read connections' timeout lost on the way, it refuses at start
/// naming the setting; with the configuration docs/operations.md gives
/// (session mode, a database entry for the reads that sets their timeout)
/// the API and the workers run through it.
@Suite("Behind PgBouncer", .serialized)
struct PgBouncerCommandTests {
    /// The reads' entry of the documented configuration: PgBouncer sets their timeout.
    static let reads = ThrowawayPgBouncer.Database("ledger_reads", "connect_query='SET statement_timeout = 10000'")

    /// `retract serve` run to its end, or stopped after 60 s (exit 124).
    static func serve(_ arguments: [String], database: String) throws -> RetractCLI.Result {
        try RetractCLI.run(
            ["60", try RetractCLI.binary.path, "serve", "--port", "0"] + arguments,
            executable: URL(fileURLWithPath: "/usr/bin/timeout"), environment: ["DATABASE_URL": database])
    }

    @Test func inTransactionModeServeRefusesAtStartNamingThePoolMode() throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let bouncer = try ThrowawayPgBouncer.start(
            for: postgres, poolMode: "transaction", databases: [.init("ledger"), Self.reads], ignoring: ["statement_timeout"])
        defer { bouncer.stop() }
        let refused = try Self.serve(["--read-database-url", bouncer.url("ledger_reads")], database: bouncer.url("ledger"))
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("did not reach a LISTEN on it"), "\(refused.stderr)")
        #expect(refused.stderr.contains("pool_mode = session"), "\(refused.stderr)")
    }

    @Test func aReadTimeoutThePoolerRefusesOrDropsIsRefusedAtStartNamingTheSetting() throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        // PgBouncer as installed: it refuses the startup parameter.
        let strict = try ThrowawayPgBouncer.start(for: postgres, poolMode: "session", databases: [.init("ledger")])
        let refused = try Self.serve([], database: strict.url("ledger"))
        strict.stop()
        // Gone, not left listening: a daemon started with a blocked SIGTERM outlived every run's stop().
        #expect(!strict.isListening)
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("unsupported startup parameter"), "\(refused.stderr)")
        #expect(refused.stderr.contains("ignore_startup_parameters"), "\(refused.stderr)")

        // Told to ignore it, PgBouncer drops it: the reads would have no timeout.
        let lenient = try ThrowawayPgBouncer.start(
            for: postgres, poolMode: "session", databases: [.init("ledger")], ignoring: ["statement_timeout"])
        defer { lenient.stop() }
        let dropped = try Self.serve(["--read-timeout", "7"], database: lenient.url("ledger"))
        #expect(dropped.status == 2, "\(dropped)")
        #expect(dropped.stderr.contains("statement_timeout = 0 ms, not the 7000 ms"), "\(dropped.stderr)")
        #expect(dropped.stderr.contains("connect_query"), "\(dropped.stderr)")
    }

    /// The configuration docs/operations.md gives: a retraction made through
    /// the API is sent by the workers to every device, the device feed and
    /// the notification list are read, and a read of a conversation is
    /// taken and pushed, all through PgBouncer.
    @Test func withTheDocumentedConfigurationTheAPIAndWorkersRunThroughIt() async throws {
        let postgres = try ThrowawayPostgres.start()
        defer { postgres.stop() }
        let bouncer = try ThrowawayPgBouncer.start(
            for: postgres, poolMode: "session", databases: [.init("ledger"), Self.reads], ignoring: ["statement_timeout"])
        defer { bouncer.stop() }
        try await SimulatedAPNs.with { apns in
            let stage = EndToEndTests.Stage(apns: apns, url: try DatabaseURL(bouncer.url("ledger")))
            #expect(try stage.retract(["migrate"]).status == 0)
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<30)
            try stage.record("m1", app: "chat", tokens: devices)
            let key = try ServeCommandTests.createKey(stage, app: "chat", scopes: "record,retract,read,client")
            let server = try await ServeProcess.start(
                ["--read-database-url", bouncer.url("ledger_reads"), "--log-level", "info"],
                environment: ["DATABASE_URL": bouncer.url("ledger"), "APNS_CA_FILE": apns.caPath])
            let made = try await server.http.call("POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["m1"]}"#)
            #expect(made.status == 202, "\(made)")
            let id = try #require(made.json?["id"] as? String)
            let done = try await server.http.poll("/v1/retractions/\(id)", key: key) { $0.json?["state"] as? String == "done" }
            #expect(done.json?["sent"] as? Int == devices.count, "\(done)")
            for device in devices { #expect(!apns.inbox(device).isEmpty, "device \(device.hex) got no removal push") }
            let feed = try await server.http.call("GET", "/v1/devices/\(devices[0].hex)/retractions?app=chat", key: key)
            #expect(feed.status == 200 && (feed.json?["retractions"] as? [[String: Any]])?.count == 1, "\(feed)")
            let listed = try await server.http.call("GET", "/v1/notifications?app=chat", key: key)
            #expect(listed.status == 200, "\(listed)")

            // Alice read the conversation on her laptop: her two phones are told.
            let phones = Array(devices.prefix(2))
            let recorded = try await server.http.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"chat","reference":"c1","tokens":["\#(phones[0].hex)","\#(phones[1].hex)"],"thread":"t1","recipient":"alice"}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let read = try await server.http.call(
                "POST", "/v1/reads", key: key, body: #"{"app":"chat","recipient":"alice","thread":"t1","upToReference":"c1"}"#)
            #expect(read.status == 202 && read.json?["devices"] as? Int == 2, "\(read) \(server.log.suffix(2000))")
            let deadline = ContinuousClock.now + .seconds(20)
            while phones.contains(where: { apns.inbox($0).count < 2 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            for phone in phones { #expect(apns.inbox(phone).count == 2, "device \(phone.hex) was not told of the read") }
            #expect(try await server.stop() == 0, "\(server.log.suffix(3000)) \(bouncer.log.suffix(2000))")
        }
    }
}
