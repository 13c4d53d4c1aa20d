import APNsSimulator
import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Synchronization
import Testing

/// The `retract` binary as a user runs it, against a real ledger and the
/// simulator over TLS (in this process; the binary trusts it through APNS_CA_FILE).
@Suite("retract end to end")
struct EndToEndTests {
    /// A migrated ledger, a simulator, and a `retract` that uses both.
    struct Stage {
        var apns: SimulatedAPNs
        var url: DatabaseURL

        func retract(_ arguments: [String], environment: [String: String?] = [:]) throws -> RetractCLI.Result {
            var merged: [String: String?] = ["DATABASE_URL": url.withPassword, "APNS_CA_FILE": apns.caPath]
            merged.merge(environment) { _, given in given }
            return try RetractCLI.run(arguments, environment: merged)
        }

        func start(_ arguments: [String]) throws -> Process {
            try RetractCLI.start(arguments, environment: ["DATABASE_URL": url.withPassword, "APNS_CA_FILE": apns.caPath])
        }

        func addApp(_ name: String) throws {
            let added = try retract(apps.appsAddArguments(name: name))
            try #require(added.status == 0, "\(added.stderr)")
        }

        var apps: SimulatedAPNs { apns }

        func store<Result: Sendable>(_ body: (RetractStore) async throws -> Result) async throws -> Result {
            try await RetractStore.withStore(url: url, maximumConnections: 2, logger: TestDatabase.logger, body)
        }

        /// Records `reference` for `tokens` with `retract record --tokens-file`.
        func record(_ reference: String, app: String, tokens: [DeviceToken]) throws {
            let file = try apns.file("tokens-\(reference).txt", tokens.map(\.hex).joined(separator: "\n"))
            let recorded = try retract(["record", "--app", app, "--reference", reference, "--tokens-file", file])
            try #require(recorded.status == 0, "\(recorded.stderr)")
        }
    }

    static func withStage(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(), phones: APNsPhoneMix = APNsPhoneMix(), _ body: (Stage) async throws -> Void
    ) async throws {
        try await SimulatedAPNs.with(faults: faults, phones: phones) { apns in
            try await TestDatabase.withMigratedURL { url in
                try await body(Stage(apns: apns, url: url))
            }
        }
    }

    struct Account: Decodable {
        var id: String
        var state: String
        var total: Int
        var sent: Int
        var unregistered: Int
        var failed: Int
        var pending: Int
        var dryRun: Bool
        var failures: [String: Int]
    }

    static func account(_ result: RetractCLI.Result) throws -> Account {
        try JSONDecoder().decode(Account.self, from: Data(result.stdout.utf8))
    }

    /// `retract apps add` goes through the engine's registration: a bad
    /// value is named by its flag, a taken name and a key that cannot be read
    /// are refused with their exit codes, and nothing is registered twice.
    @Test func appsAddNamesTheFlagAtFaultAndRefusesATakenName() async throws {
        try await Self.withStage { stage in
            var arguments = stage.apps.appsAddArguments(name: "chat")
            let keyID = try #require(arguments.firstIndex(of: "--key-id"))
            arguments[keyID + 1] = "short"
            let badKeyID = try stage.retract(arguments)
            #expect(badKeyID.status == 2)
            #expect(badKeyID.stderr.contains("retract apps add: --key-id: \"short\": 10 uppercase letters or digits"), "\(badKeyID.stderr)")

            let missingKey = try stage.retract(stage.apps.appsAddArguments(name: "chat", keyPath: "/nonexistent/AuthKey.p8"))
            #expect(missingKey.status == 8)
            #expect(missingKey.stderr.contains("/nonexistent/AuthKey.p8 cannot be read (no such file)"), "\(missingKey.stderr)")

            try stage.addApp("chat")
            let taken = try stage.retract(stage.apps.appsAddArguments(name: "chat"))
            #expect(taken.status == 2)
            #expect(taken.stderr.contains("an app named \"chat\" is registered already"), "\(taken.stderr)")
        }
    }

    @Test func aChatMessageRetractedFromTheCommandLineReachesItsThreeDevices() async throws {
        try await Self.withStage { stage in
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<3)
            let recorded = try stage.retract(
                ["record", "--app", "chat", "--reference", "msg-8812"] + devices.flatMap { ["--token", $0.hex] })
            #expect(recorded.status == 0, "\(recorded.stderr)")
            #expect(recorded.stdout == "recorded 3 new deliveries of msg-8812 (3 tokens given)\n")

            let result = try stage.retract(["notification", "msg-8812", "--app", "chat", "--reason", "deleted for everyone", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let account = try Self.account(result)
            #expect(account.state == "done")
            #expect((account.total, account.sent, account.unregistered, account.failed) == (3, 3, 0, 0))

            for device in devices {
                let inbox = stage.apns.inbox(device)
                try #require(inbox.count == 1, "device \(device) got \(inbox.count) pushes")
                #expect(inbox[0].pushType == "background")
                let center = InMemoryNotificationCenter(delivered: [
                    DeliveredNotification(identifier: "deleted", referenceID: "msg-8812"),
                    DeliveredNotification(identifier: "kept", referenceID: "msg-8813"),
                ])
                #expect(await RetractionHandler(center: center).handle(userInfo: inbox[0].userInfo) == .removed(["deleted"]))
                #expect(center.delivered.map(\.identifier) == ["kept"])
            }

            let status = try stage.retract(["status", account.id])
            #expect(status.status == 0)
            #expect(status.stdout.contains("devices: 3 · sent 3 · unregistered 0 · failed 0"))
        }
    }

    @Test func aBroadcastOfTwoReferencesGetsOneCoalescedPushPerDevice() async throws {
        try await Self.withStage { stage in
            try stage.addApp("shop")
            // Eight pages of 500 devices, side by side in a worker's lanes:
            // whatever its page, a device's two references make one push.
            let devices = TestTokens.tokens(0..<4_000)
            try stage.record("spring-sale", app: "shop", tokens: devices)
            // Half the devices also got the reminder.
            try stage.record("spring-sale-reminder", app: "shop", tokens: Array(devices.prefix(2_000)))

            let result = try stage.retract(["notification", "spring-sale", "spring-sale-reminder", "--app", "shop", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let account = try Self.account(result)
            #expect((account.total, account.sent, account.failed) == (4_000, 4_000, 0))
            // Not a terminal: plain progress lines, no bar.
            #expect(!result.stderr.contains("█"))

            let inboxes = stage.apns.simulator.inboxes
            #expect(inboxes.count == 4_000)
            for (index, device) in devices.enumerated() {
                let inbox = inboxes[device.hex] ?? []
                try #require(inbox.count == 1, "device \(index) got \(inbox.count) pushes")
                let expected: Set<ReferenceID> = index < 2_000 ? ["spring-sale", "spring-sale-reminder"] : ["spring-sale"]
                #expect(RetractPayload.retraction(in: inbox[0].userInfo) == expected)
            }
        }
    }

    @Test func deadTokensAreMarkedAndTheNextRetractionSkipsThem() async throws {
        let gone = TestTokens.token(4)
        let bad = TestTokens.token(5)
        try await Self.withStage(faults: APNsSimulatorFaults(unregisteredTokens: [gone.hex: Date()], badDeviceTokens: [bad.hex])) { stage in
            try stage.addApp("news")
            let devices = TestTokens.tokens(0..<10)
            try stage.record("a", app: "news", tokens: devices)
            try stage.record("b", app: "news", tokens: devices)

            let first = try Self.account(try stage.retract(["notification", "a", "--app", "news", "--json"]))
            #expect((first.total, first.sent, first.unregistered, first.failed) == (10, 8, 1, 1))
            let rejected = stage.apns.simulator.statistics.rejected

            // The dead device is skipped and counted; the bad token is a failure, tried again.
            let second = try stage.retract(["notification", "b", "--app", "news"])
            #expect(second.status == 3, "\(second.stderr)")
            #expect(second.stdout.contains("devices: 10 · sent 8 · unregistered 1 (1 known dead, skipped) · failed 1"), "\(second.stdout)")
            #expect(second.stdout.contains("failed: 1 × BadDeviceToken"))
            #expect(stage.apns.simulator.statistics.rejected == rejected + 1)
            #expect(stage.apns.inbox(gone).isEmpty && stage.apns.inbox(bad).isEmpty)
        }
    }

    @Test func aStormOf429And503EndsWithEveryLiveDeviceReached() async throws {
        try await Self.withStage(faults: APNsSimulatorFaults(tooManyRequestsRate: 0.15, serviceUnavailableRate: 0.15, seed: 11)) { stage in
            try stage.addApp("storm")
            let devices = TestTokens.tokens(0..<1000)
            try stage.record("storm", app: "storm", tokens: devices)
            let result = try stage.retract(["notification", "storm", "--app", "storm", "--json", "--retry-base-delay", "5"])
            #expect(result.status == 0, "\(result.stderr)")
            let account = try Self.account(result)
            #expect((account.total, account.sent, account.failed, account.pending) == (1000, 1000, 0, 0))
            #expect(stage.apns.simulator.statistics.rejected > 200)
            #expect(devices.allSatisfy { stage.apns.inbox($0).count == 1 })
        }
    }

    @Test func aWorkerKilledMidwayIsFinishedByTheNextWithNoDeviceMissed() async throws {
        // Slow answers, a narrow window: the first process needs about 15 s, and is killed after 300 devices.
        try await Self.withStage(faults: APNsSimulatorFaults(latency: .milliseconds(50))) { stage in
            try stage.addApp("crash")
            let devices = TestTokens.tokens(0..<3000)
            try stage.record("oops", app: "crash", tokens: devices)
            let arguments = ["notification", "oops", "--app", "crash", "--idempotency-key", "pull-oops", "--lease", "2"]

            let first = try stage.start(arguments + ["--window", "10"])
            let deadline = Date().addingTimeInterval(60)
            var sent = 0
            while sent < 300, Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
                sent = stage.apns.simulator.statistics.accepted
            }
            kill(first.processIdentifier, SIGKILL)
            first.waitUntilExit()
            #expect(first.terminationReason == .uncaughtSignal)
            let reachedBeforeKill = stage.apns.simulator.statistics.accepted
            #expect(reachedBeforeKill < 3000, "the first process finished before it could be killed")

            // The same command again resumes the same retraction once the dead process's leases lapse.
            let second = try stage.retract(arguments + ["--window", "200", "--json"])
            #expect(second.status == 0, "\(second.stderr)")
            let account = try Self.account(second)
            #expect(account.state == "done")
            #expect(account.total == 3000)
            #expect(account.pending == 0 && account.failed == 0)
            let counts = devices.map { stage.apns.inbox($0).count }
            #expect(counts.allSatisfy { $0 >= 1 }, "devices missed: \(counts.filter { $0 == 0 }.count)")
            // Only devices of items the killed process held can get a second push: at most lanes × page size.
            #expect(counts.reduce(0, +) - 3000 <= 4 * 500)
            let retractions = try await stage.store { store in
                try await store.client.query("SELECT count(*) FROM retractions", logger: TestDatabase.logger).collect().count
            }
            #expect(retractions == 1)
        }
    }

    @Test func aDryRunCountsAndSendsNothing() async throws {
        try await Self.withStage { stage in
            try stage.addApp("dry")
            try stage.record("r", app: "dry", tokens: TestTokens.tokens(0..<25))
            let result = try stage.retract(["notification", "r", "--app", "dry", "--dry-run"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("dry run: 25 devices would get a removal push; nothing was sent"))
            #expect(stage.apns.simulator.statistics.accepted == 0)

            // Queued without waiting: exit 0, and the account says queued.
            let queued = try stage.retract(["notification", "r", "--app", "dry", "--no-wait", "--json"])
            #expect(queued.status == 0, "\(queued.stderr)")
            let account = try Self.account(queued)
            #expect((account.state, account.total, account.sent) == ("queued", 25, 0))
            #expect(stage.apns.simulator.statistics.accepted == 0)
        }
    }

    @Test func onATerminalTheProgressIsABarWithRateAndETA() async throws {
        try await Self.withStage(faults: APNsSimulatorFaults(latency: .milliseconds(5))) { stage in
            try stage.addApp("tty")
            try stage.record("r", app: "tty", tokens: TestTokens.tokens(0..<2000))
            // util-linux's `script` runs the command on a pseudo-terminal and copies what it shows.
            let command = [try RetractCLI.binary.path, "notification", "r", "--app", "tty", "--window", "20"]
                .map { "'\($0)'" }.joined(separator: " ")
            let result = try RetractCLI.run(
                ["-qec", command, "/dev/null"], executable: URL(fileURLWithPath: "/usr/bin/script"),
                environment: ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath])
            #expect(result.status == 0, "\(result.stdout)")
            #expect(result.stdout.contains("█"))
            #expect(result.stdout.contains(" devices · "))
            #expect(result.stdout.contains("/s · ETA "))
            #expect(result.stdout.contains("devices: 2000 · sent 2000 · unregistered 0 · failed 0"))
            #expect(!result.stdout.contains("progress: "))
        }
    }

    @Test func theDemoRunsOnItsOwnPostgreSQLAndRemovesIt() throws {
        // A temp folder of the demo's own: tests beside this one make and remove clusters in the shared one.
        let temp = FileManager.default.temporaryDirectory.appendingPathComponent("retract-demo-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: temp) }
        @Sendable func clusters() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: temp.path).filter { $0.hasPrefix("retract-demo-postgres-") }
        }
        // Whether the demo's cluster was seen in that folder while it ran: the check after it is not empty-handed.
        final class Watch: Sendable {
            let seen = Mutex(false)
            let done = Mutex(false)
        }
        let watch = Watch()
        defer { watch.done.withLock { $0 = true } }
        Thread {
            while !watch.done.withLock({ $0 }) {
                if (try? clusters().isEmpty) == false { watch.seen.withLock { $0 = true } }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }.start()
        let result = try RetractCLI.run(
            ["demo", "--devices", "300", "--uninstalled", "3"], environment: ["DATABASE_URL": nil, "TMPDIR": temp.path])
        watch.done.withLock { $0 = true }
        #expect(watch.seen.withLock { $0 }, "the demo's cluster was not made in TMPDIR")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("throwaway PostgreSQL on 127.0.0.1:"))
        #expect(result.stdout.contains("devices: 300 · sent 297 · unregistered 3 · failed 0"))
        // In background mode, force-quit and throttled phones keep it; the extension's carrier reaches every phone.
        #expect(result.stdout.contains("after background mode:"))
        #expect(!result.stdout.contains("; 0 still show it (force-quit"))
        #expect(
            result.stdout.contains(
                "after service-extension mode:\n     iPhones:        297 of the 297 reachable removed it; 0 still show it"),
            "\(result.stdout)")
        // Only the latest push reaches the phone: a burst to suspended apps, and a phone offline.
        #expect(result.stdout.contains("m1 and m2 gone from 100 of 100 phones; m3 still shows on 100"), "\(result.stdout)")
        #expect(result.stdout.contains("the phone shows m5 (without the feed it would show m4 and m5)"), "\(result.stdout)")
        #expect(try clusters() == [], "the demo left its PostgreSQL folder behind")
    }

    @Test func badInputsSayWhatIsWrongAndExitWithTheirCode() async throws {
        try await Self.withStage { stage in
            try stage.addApp("chat")
            try stage.record("known", app: "chat", tokens: [TestTokens.token(1)])

            let unknownApp = try stage.retract(["notification", "known", "--app", "nope"])
            #expect(unknownApp.status == 6)
            #expect(unknownApp.stderr == "retract notification: no app named \"nope\"; known apps: chat\n")

            let unknownReference = try stage.retract(["notification", "never-sent", "--app", "chat"])
            #expect(unknownReference.status == 7)
            #expect(unknownReference.stderr == "retract notification: app chat has no recorded delivery of \"never-sent\"\n")

            let unreachable = try stage.retract(
                ["notification", "known", "--app", "chat"],
                environment: ["DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable"])
            #expect(unreachable.status == 4)
            #expect(unreachable.stderr.hasPrefix("retract notification: "))
            #expect(unreachable.stderr.split(separator: "\n").count == 1)

            let badToken = try stage.retract(["record", "--app", "chat", "--reference", "x", "--token", "xyz"])
            #expect(badToken.status == 2)
            #expect(badToken.stderr.contains("--token #1: \"xyz\" is not a device token"))

            // A key file that went missing: named, exit 8, and no retraction written.
            let keyPath = try stage.apns.file("Doomed.p8", try String(contentsOfFile: stage.apns.keyPath, encoding: .utf8))
            let added = try stage.retract(stage.apns.appsAddArguments(name: "doomed", keyPath: keyPath))
            #expect(added.status == 0, "\(added.stderr)")
            try stage.record("known", app: "doomed", tokens: [TestTokens.token(1)])
            try FileManager.default.removeItem(atPath: keyPath)
            let missingKey = try stage.retract(["notification", "known", "--app", "doomed"])
            #expect(missingKey.status == 8)
            #expect(missingKey.stderr == "retract notification: app doomed: the APNs key \(keyPath) cannot be read (no such file)\n")
            let retractions = try await stage.store { store in
                try await store.client.query("SELECT id FROM retractions", logger: TestDatabase.logger).collect().count
            }
            #expect(retractions == 0)

            let addWithoutKey = try stage.retract(stage.apns.appsAddArguments(name: "nokey", keyPath: keyPath))
            #expect(addWithoutKey.status == 8)
            #expect(try stage.retract(["apps", "list"]).stdout.contains("nokey") == false)

            let noSuchRetraction = try stage.retract(["status", UUID().uuidString])
            #expect(noSuchRetraction.status == 7)
        }
    }
}
