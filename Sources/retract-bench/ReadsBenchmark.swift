import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `retract-bench reads`: a chat load of reads through `retract serve` (its
/// own process) and the APNs simulator in this process (docs/reads.md).
/// `users` users with `devices` phones each are sent messages of one
/// conversation each; then, for `seconds`, reads are posted at `rate` a
/// second (open loop: each at its time, at most `inFlight` unanswered), each
/// a user reading their next message on their first phone, while one-device
/// deletions are timed one after another; the same deletions are timed
/// alone first. Every read is timed from just before its POST to the
/// simulator accepting the push to each of the user's other phones (the
/// simulator's receive time; both clocks are this process's), and each push
/// is checked: background, carrying the message read, none to the reader.
/// The ledger's growth is read with psql before and after.
struct ReadsBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reads",
        abstract: "Reads of a chat load through retract serve: rate accepted, POST to push, ledger bytes, deletions beside them.")

    @OptionGroup var options: ServeBenchmarkOptions

    @Option(help: "Users, each with one conversation.")
    var users = 10_000

    @Option(help: "Phones per user; reads are made on the first.")
    var devices = 3

    @Option(help: "Reads posted a second.")
    var rate = 2_000

    @Option(name: .customShort("d"), help: "Seconds of read load (and of deletions timed alone before it).")
    var seconds = 10

    @Option(help: "Reads posted and not answered yet, at most.")
    var inFlight = 256

    @Option(help: "Connections the reads are posted on.")
    var connections = 32

    @Option(help: "Milliseconds between the starts of two timed deletions.")
    var probeEveryMs = 50

    @Option(help: "The simulator's answer time in ms (a data centre's: tens).")
    var latencyMs: Int64 = 20

    func run() async throws {
        let reads = rate * seconds
        // Each read takes a user's next message: enough for every user's reads, and one more left unread.
        let messages = (reads + users - 1) / users + 1
        let probes = max(1, seconds * 1000 / probeEveryMs)
        let simulator = APNsSimulatorConfiguration(faults: APNsSimulatorFaults(latency: .milliseconds(latencyMs)))
        try await ServeStage.with(
            options, folder: "reads", app: "reads", keyID: "READSKEY01", teamID: "READSTEAM1", scopes: "record,retract", simulator: simulator
        ) { stage in
            // Reads of every user through one key: no key rate (docs/reads.md says a service raises it).
            let api = try await stage.serve(["--mode", "all", "--key-write-rate", "0"], name: "serve")
            try await record(messages: messages, probes: probes, on: api)
            let alone = try await timeDeletions(phase: 0, count: probes, api: api, simulator: stage.simulator)

            let ledger = Ledger(url: options.databaseURL)
            let before = try ledger.measure()
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
            let readHTTP = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let readAPI = LatencyBenchmark.API(http: readHTTP, base: api.base, key: api.key)
            async let loaded = timeDeletions(phase: 1, count: probes, api: api, simulator: stage.simulator)
            let sent = await postReads(reads, on: readAPI)
            let beside = try await loaded
            try await readHTTP.shutdown()

            let pushes = try await collectPushes(of: sent, messages: messages, simulator: stage.simulator)
            let after = try ledger.measure()
            let accepted = sent.filter { $0.status == 202 }
            let span = (accepted.map(\.answered).max() ?? Date()).timeIntervalSince(sent.map(\.started).min() ?? Date())
            let answers = accepted.map { $0.answered.timeIntervalSince($0.started) * 1000 }.sorted()
            let figures: [String: Double] = [
                "reads": Double(reads), "accepted": Double(accepted.count), "refused": Double(sent.count - accepted.count),
                "acceptedPerSecond": Double(accepted.count) / max(span, 0.001),
                "answerP50": LatencyBenchmark.percentile(answers, 0.50), "answerP99": LatencyBenchmark.percentile(answers, 0.99),
                "pushes": Double(pushes.latencies.count), "missing": Double(pushes.missing), "wrong": Double(pushes.wrong),
                "readerPushes": Double(pushes.toReaders),
                "pushP50": LatencyBenchmark.percentile(pushes.latencies, 0.50),
                "pushP99": LatencyBenchmark.percentile(pushes.latencies, 0.99), "pushMax": pushes.latencies.last ?? 0,
                "deleteAloneP50": LatencyBenchmark.percentile(alone, 0.50), "deleteAloneP99": LatencyBenchmark.percentile(alone, 0.99),
                "deleteLoadedP50": LatencyBenchmark.percentile(beside, 0.50),
                "deleteLoadedP99": LatencyBenchmark.percentile(beside, 0.99),
                "bytesPerRead": Double(after.bytes - before.bytes) / Double(max(accepted.count, 1)),
                "feedRowsPerRead": Double(after.feedRows - before.feedRows) / Double(max(accepted.count, 1)),
                "writeTransactionsPerRead": Double(after.transaction - before.transaction - 1) / Double(max(accepted.count, 1)),
                "messagesPerUser": Double(messages),
            ]
            let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
            print(String(decoding: json, as: UTF8.self))
        }
    }

    /// Token of `user`'s `device`th phone; deletions' phones come after every user's.
    private func token(user: Int, device: Int) -> String { LatencyBenchmark.token(user * devices + device) }
    private func probeToken(phase: Int, _ index: Int) -> String { LatencyBenchmark.token(users * devices + phase * 1_000_000 + index) }

    /// Message `k` (1…) of every user's conversation to all their phones, one
    /// `k` after the other so each is sent after the one before; then each
    /// timed deletion's message to its own phone.
    private func record(messages: Int, probes: Int, on api: LatencyBenchmark.API) async throws {
        let perPost = 500
        for message in 1...messages {
            for first in stride(from: 0, to: users, by: perPost) {
                let entries = (first..<min(first + perPost, users)).map { user in
                    let tokens = (0..<devices).map { "\"\(token(user: user, device: $0))\"" }.joined(separator: ",")
                    return #"{"app":"reads","reference":"m-\#(user)-\#(message)","tokens":[\#(tokens)],"recipient":"u-\#(user)","thread":"c-\#(user)"}"#
                }
                try await api.post("/v1/deliveries", "[" + entries.joined(separator: ",") + "]")
            }
        }
        for phase in 0..<2 {
            for first in stride(from: 0, to: probes, by: perPost) {
                let entries = (first..<min(first + perPost, probes)).map { index in
                    #"{"app":"reads","reference":"del-\#(phase)-\#(index)","tokens":["\#(probeToken(phase: phase, index))"]}"#
                }
                try await api.post("/v1/deliveries", "[" + entries.joined(separator: ",") + "]")
            }
        }
    }

    /// One-message deletions one after another, one every `probeEveryMs`:
    /// each POST's start to the simulator's receipt of its push, in ms, sorted.
    private func timeDeletions(phase: Int, count: Int, api: LatencyBenchmark.API, simulator: APNsSimulator) async throws -> [Double] {
        let start = ContinuousClock.now
        var latencies: [Double] = []
        for index in 0..<count {
            try await Task.sleep(until: start + .milliseconds(index * probeEveryMs))
            let started = Date()
            try await api.post("/v1/retractions", #"{"app":"reads","references":["del-\#(phase)-\#(index)"]}"#)
            let received = try await LatencyBenchmark.firstPush(to: probeToken(phase: phase, index), on: simulator, within: .seconds(30))
            latencies.append(received.timeIntervalSince(started) * 1000)
        }
        return latencies.sorted()
    }

    struct SentRead {
        var user: Int
        var message: Int
        var started: Date
        var answered: Date
        var status: Int
        var devices: Int
    }

    /// `count` reads, the `i`th at `i / rate` seconds from the start (later when
    /// `inFlight` are unanswered): user `i % users` reading their message `i / users + 1`.
    private func postReads(_ count: Int, on api: LatencyBenchmark.API) async -> [SentRead] {
        let start = ContinuousClock.now
        return await withTaskGroup(of: SentRead.self) { group in
            var sent: [SentRead] = []
            sent.reserveCapacity(count)
            var unanswered = 0
            for index in 0..<count {
                try? await Task.sleep(until: start + .nanoseconds(Int64(index) * 1_000_000_000 / Int64(rate)))
                while unanswered >= inFlight, let read = await group.next() {
                    sent.append(read)
                    unanswered -= 1
                }
                let (user, message) = (index % users, index / users + 1)
                let body =
                    #"{"app":"reads","recipient":"u-\#(user)","thread":"c-\#(user)","upToReference":"m-\#(user)-\#(message)","reader":"\#(token(user: user, device: 0))"}"#
                group.addTask {
                    let started = Date()
                    let (status, answer) = (try? await api.answer("/v1/reads", body)) ?? (0, Data())
                    let taken = (try? JSONSerialization.jsonObject(with: answer) as? [String: Any])?["devices"] as? Int
                    return SentRead(user: user, message: message, started: started, answered: Date(), status: status, devices: taken ?? 0)
                }
                unanswered += 1
            }
            for await read in group { sent.append(read) }
            return sent
        }
    }

    struct Pushes {
        var latencies: [Double] = []
        var missing = 0
        var wrong = 0
        var toReaders = 0
    }

    /// Each accepted read's pushes, waited for up to 30 s: to every phone but
    /// the reader, the first push after the POST started, background and
    /// carrying the message read. Latencies in ms, sorted.
    private func collectPushes(of sent: [SentRead], messages: Int, simulator: APNsSimulator) async throws -> Pushes {
        let accepted = sent.filter { $0.status == 202 }
        let deadline = ContinuousClock.now + .seconds(30)
        var pushes = Pushes()
        while true {
            pushes = Pushes()
            for read in accepted {
                for device in 1..<devices {
                    let inbox = simulator.inbox(for: token(user: read.user, device: device))
                    guard let push = inbox.first(where: { $0.receivedAt >= read.started }) else {
                        pushes.missing += 1
                        continue
                    }
                    let body = String(decoding: push.body, as: UTF8.self)
                    if push.headers["apns-push-type"] != "background" || !body.contains("\"m-\(read.user)-\(read.message)\"") {
                        pushes.wrong += 1
                    }
                    pushes.latencies.append(push.receivedAt.timeIntervalSince(read.started) * 1000)
                }
            }
            if pushes.missing == 0 || ContinuousClock.now > deadline { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        pushes.toReaders = (0..<users).reduce(0) { $0 + simulator.inbox(for: token(user: $1, device: 0)).count }
        pushes.latencies.sort()
        return pushes
    }

    /// What the ledger holds that reads write, read with psql.
    struct Ledger {
        let url: String

        struct Size {
            /// device_feed's partitions and read_marks, with their indexes and TOAST.
            var bytes: Int
            var feedRows: Int
            /// A new transaction id: the difference of two counts the write transactions between.
            var transaction: Int
        }

        func measure() throws -> Size {
            let query = """
                SELECT (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('device_feed'))
                         + pg_total_relation_size('read_marks'),
                       (SELECT count(*) FROM device_feed), pg_current_xact_id()
                """
            let process = Process()
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["psql", url, "-XAt", "-F", " ", "-v", "ON_ERROR_STOP=1", "-c", query]
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let fields = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            guard process.terminationStatus == 0, fields.count == 3 else { throw CommandFailure("psql could not measure the ledger: \(text)") }
            return Size(bytes: fields[0], feedRows: fields[1], transaction: fields[2])
        }
    }
}
