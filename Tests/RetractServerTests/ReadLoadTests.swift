import APNsSimulator
import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import Testing

/// What a key that may only read can do to everyone else: nothing. Its
/// reads have a pool of their own and a statement timeout, the list reads as
/// many rows as a page shows, the health check has its own connection, and
/// each key has a rate of reads and of writes.
@Suite("Read load")
struct ReadLoadTests {
    /// `references` references of `devices` devices each, written in one statement as a busy day's recording would leave them,
    /// then vacuumed as autovacuum would have by then.
    static func fill(_ stage: APIStage, references: Int, devices: Int) async throws {
        let statements = [
            "SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date)",
            "SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date - 1)",
            """
            INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
            SELECT \(stage.chat.id), 'ref-' || r, decode(lpad(to_hex(d), 64, '0'), 'hex'),
                   ((now() - r * interval '10 ms') AT TIME ZONE 'UTC')::date, now() - r * interval '10 ms', 'apns'
            FROM generate_series(1, \(references)) r, generate_series(1, \(devices)) d
            """,
            "VACUUM ANALYZE deliveries",
            "VACUUM ANALYZE notifications",
        ]
        for statement in statements { try await TestDatabase.execute(statement, on: stage.store) }
    }

    /// Times `call` each half second until `done`; returns the slowest answer and any that was not 2xx.
    static func probe(
        until done: @escaping @Sendable () -> Bool, _ call: @escaping @Sendable () async throws -> HTTPAnswer
    ) async throws
        -> (slowest: Duration, failures: [String])
    {
        var slowest = Duration.zero
        var failures: [String] = []
        repeat {
            let started = ContinuousClock.now
            let answer = try await call()
            slowest = max(slowest, .now - started)
            if !(200..<300).contains(answer.status) { failures.append("\(answer)") }
            try await Task.sleep(for: .milliseconds(500))
        } while !done()
        return (slowest, failures)
    }

    @Test func fortyUnboundedListsLeaveRetractionsAndReadinessAnsweringWithinASecond() async throws {
        try await APIStage.with { stage in
            // A chat app's day: 30,000 messages of 20 recipients. When each list grouped all 600,000 deliveries, the
            // 40 took the one pool's connections: 73 of these 120 calls were 503 and a retraction waited 2.5 s.
            try await Self.fill(stage, references: 30_000, devices: 20)
            let reader = try await stage.key([.read], apps: [stage.chat], name: "dashboard")
            let backend = try await stage.chatKey()
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: backend, body: #"{"app":"chat","reference":"probe","tokens":["ff"]}"#)
            #expect(recorded.status == 201, "\(recorded)")

            let listing = Task {
                try await withThrowingTaskGroup(of: [Int].self) { group in
                    for _ in 0..<40 {
                        group.addTask {
                            var statuses: [Int] = []
                            for _ in 0..<3 { statuses.append(try await stage.call("GET", "/v1/notifications", key: reader).status) }
                            return statuses
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0 += $1 }
                }
            }
            let finished = { @Sendable in listing.isCancelled }
            // Probes with clients of their own: a client's connections per host would queue them behind the lists.
            let retracting = HTTPCaller(baseURL: stage.http.baseURL)
            let checking = HTTPCaller(baseURL: stage.http.baseURL)
            async let retractions = Self.probe(until: finished) {
                try await retracting.call(
                    "POST", "/v1/retractions", key: backend, body: #"{"app":"chat","references":["probe"],"dryRun":true,"reason":"probe"}"#)
            }
            async let readiness = Self.probe(until: finished) { try await checking.call("GET", "/readyz") }
            let statuses = try await listing.value
            listing.cancel()
            let (retractSlowest, retractFailures) = try await retractions
            let (readySlowest, readyFailures) = try await readiness
            #expect(retractFailures.isEmpty && retractSlowest < .seconds(1), "POST /v1/retractions: \(retractSlowest), \(retractFailures)")
            #expect(readyFailures.isEmpty && readySlowest < .seconds(1), "/readyz: \(readySlowest), \(readyFailures)")
            // The lists themselves were answered: read, or told to slow down.
            #expect(
                statuses.count == 120 && statuses.allSatisfy { $0 == 200 || $0 == 429 },
                "\(Dictionary(grouping: statuses) { $0 }.mapValues(\.count))")
        }
    }

    @Test func aReadStoppedByItsTimeoutIsA503OfItsOwnAndTheServerStaysReady() async throws {
        // The writes beside the reads must be answered before the first read times out (4 s): on a busy
        // machine (CI's test runs side by side with builds) a dry run and a readiness check took 1.3 s, and once
        // 3.1 s, so no bound of its own is set. The lock outlasts two rounds of timeouts, so that the four
        // lists on two connections all time out.
        try await APIStage.with(readPool: RetractStore.ReadPool(connections: 2, statementTimeout: .seconds(4))) { stage in
            let reader = try await stage.key([.read], apps: [stage.chat], name: "dashboard")
            let backend = try await stage.chatKey()
            let recorded = try await stage.call(
                "POST", "/v1/deliveries", key: backend, body: #"{"app":"chat","reference":"m-1","tokens":["aa"]}"#)
            #expect(recorded.status == 201, "\(recorded)")
            // Another session holds the notification list's table, as a long maintenance would: every list waits on it.
            let (locked, lockedSignal) = AsyncStream.makeStream(of: Void.self)
            let holding = Task {
                try await stage.store.client.withTransaction(logger: TestDatabase.logger) { connection in
                    _ = try await connection.query("LOCK TABLE notifications IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                    lockedSignal.yield()
                    try await Task.sleep(for: .seconds(10))
                }
            }
            for await _ in locked { break }
            let (lists, writesAnswered) = try await withThrowingTaskGroup(of: (HTTPAnswer, ContinuousClock.Instant).self) { group in
                for _ in 0..<4 {
                    group.addTask { (try await stage.call("GET", "/v1/notifications", key: reader), ContinuousClock.now) }
                }
                // Meanwhile retracting and readiness go on, not waiting for the reads' connections.
                let retraction = try await stage.call(
                    "POST", "/v1/retractions", key: backend, body: #"{"app":"chat","references":["m-1"],"dryRun":true,"reason":"x"}"#)
                let ready = try await stage.call("GET", "/readyz")
                #expect(retraction.status == 202 && ready.status == 200, "\(retraction) \(ready)")
                let writesAnswered = ContinuousClock.now
                return (try await group.reduce(into: [(HTTPAnswer, ContinuousClock.Instant)]()) { $0.append($1) }, writesAnswered)
            }
            let firstListAnswered = try #require(lists.map(\.1).min())
            #expect(writesAnswered < firstListAnswered, "the dry run and the readiness check waited for the lists")
            for (list, _) in lists {
                #expect(list.status == 503 && list.problem == "read-timeout" && list.header("Retry-After") != nil, "\(list)")
            }
            try await holding.value
            let after = try await stage.call("GET", "/v1/notifications", key: reader)
            #expect(after.status == 200 && (after.json?["notifications"] as? [[String: Any]])?.count == 1, "\(after)")
        }
    }

    @Test func eachKeyHasARateOfReadsAndOneOfWritesTheDeviceFeedNone() async throws {
        var settings = APIStage.defaultSettings
        settings.rateLimits = RateLimits(readsPerSecond: 1, writesPerSecond: 1, burstSeconds: 3)
        try await APIStage.with(settings: settings) { stage in
            let reader = try await stage.key([.read], apps: [stage.chat], name: "dashboard")
            let other = try await stage.key([.read], apps: [stage.chat], name: "other")
            let backend = try await stage.key([.record, .client], apps: [stage.chat], name: "backend")
            let reads = try await (0..<4).asyncMap { _ in try await stage.call("GET", "/v1/audit", key: reader) }
            #expect(reads.prefix(3).allSatisfy { $0.status == 200 }, "\(reads)")
            let refused = reads[3]
            #expect(refused.status == 429 && refused.problem == "too-many-requests" && refused.header("Retry-After") == "1", "\(refused)")
            #expect(refused.json?["detail"] as? String == "this API key makes more than 1 reads a second; try again in 1 s")
            // Another key has its own; the console counts the same key's pages.
            #expect(try await stage.call("GET", "/v1/audit", key: other).status == 200)
            let session = try await ConsoleTests.session(stage, keyName: "dashboard")
            let page = try await stage.http.call("GET", "/console/audit", headers: ["Cookie": session.cookie])
            #expect(page.status == 429 && page.header("Retry-After") == "1", "\(page)")

            // Writes have their own bucket. The device feed has none for a key that may only read it, which every
            // phone of an app holds; another key reading it counts its reads.
            let body = #"{"app":"chat","reference":"m-1","tokens":["aa"]}"#
            let writes = try await (0..<4).asyncMap { _ in try await stage.call("POST", "/v1/deliveries", key: backend, body: body) }
            #expect(writes.map(\.status) == [201, 201, 201, 429], "\(writes)")
            let phones = try await stage.key([.client], apps: [stage.chat], name: "phones")
            for _ in 0..<6 { #expect(try await stage.call("GET", "/v1/devices/aa/retractions?app=chat", key: phones).status == 200) }
            let feeds = try await (0..<4).asyncMap { _ in try await stage.call("GET", "/v1/devices/aa/retractions?app=chat", key: backend) }
            #expect(feeds.map(\.status) == [200, 200, 200, 429], "\(feeds)")
            // A second later a read is let through again.
            try await Task.sleep(for: .seconds(1.1))
            #expect(try await stage.call("GET", "/v1/audit", key: reader).status == 200)
        }
    }

    /// Twelve feed calls at once, as many phones reading; what the server answered each.
    static func feedCalls(_ stage: APIStage, key: String) async throws -> [HTTPAnswer] {
        try await withThrowingTaskGroup(of: HTTPAnswer.self) { group in
            for device in 0..<12 {
                group.addTask { try await stage.call("GET", "/v1/devices/\(String(format: "%064x", device))/retractions", key: key) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func whileItsWorkersSendTheServerPacesTheFeedAndTellsTheRest503() async throws {
        // Each push takes APNs 3 s to answer: the retraction's item stays in a lane's hands meanwhile.
        var faults = APNsSimulatorFaults()
        faults.latency = .seconds(3)
        var settings = APIStage.defaultSettings
        settings.rateLimits.feedCallsWhileSending = 2
        try await APIStage.with(faults: faults, settings: settings) { stage in
            let backend = try await stage.chatKey()
            let phones = try await stage.key([.client], apps: [stage.chat], name: "phones")
            let idle = try await Self.feedCalls(stage, key: phones)
            #expect(idle.allSatisfy { $0.status == 200 }, "\(idle)")

            let recorded = try await stage.call("POST", "/v1/deliveries", key: backend, body: #"{"app":"chat","reference":"m-1","tokens":["aa"]}"#)
            #expect(recorded.status == 201, "\(recorded)")
            let retracted = try await stage.call(
                "POST", "/v1/retractions", key: backend, body: #"{"app":"chat","references":["m-1"],"reason":"deleted"}"#)
            #expect(retracted.status == 202, "\(retracted)")
            let deadline = ContinuousClock.now + .seconds(10)
            while try await stage.count("SELECT count(*) FROM work_items WHERE claimed_by IS NOT NULL") == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            // Two a second, one at once: turns now, in half a second and in a second; the rest would wait longer.
            let started = ContinuousClock.now
            let sending = try await Self.feedCalls(stage, key: phones)
            let answered = sending.filter { $0.status == 200 }
            let paced = sending.filter { $0.status == 503 }
            #expect((2...4).contains(answered.count) && answered.count + paced.count == 12, "\(sending)")
            #expect(
                paced.allSatisfy { $0.problem == "feed-paced" && $0.header("Retry-After") == "1" }, "\(paced)")
            #expect(ContinuousClock.now - started >= .milliseconds(450))

            // Once the retraction is sent, and the second the workers count as still sending has passed, every call is answered again.
            guard let id = retracted.json?["id"] as? String else { throw HTTPCaller.CallError(description: "no id in \(retracted)") }
            _ = try await stage.waitUntilDone(id, key: backend)
            try await Task.sleep(for: .milliseconds(1200))
            let after = try await Self.feedCalls(stage, key: phones)
            #expect(after.allSatisfy { $0.status == 200 }, "\(after)")
        }
    }
}
