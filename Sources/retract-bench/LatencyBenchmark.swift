import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `retract-bench latency`: how long a chat message's deletion takes to
/// leave: one-device retractions posted one after another to `retract serve`
/// (its own processes), each timed from just before the POST to the APNs
/// simulator accepting the push, by the simulator's own receive time. The
/// simulator runs in this process, so both times come from one clock.
struct LatencyBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Time one-device retractions through retract serve, from the POST to the simulator's receipt.")

    @OptionGroup var options: ServeBenchmarkOptions

    @Option(help: "all: one `retract serve --mode all`; split: `--mode api` and `--mode workers` side by side.")
    var layout: String = "all"

    @Option(name: .customShort("n"), help: "Retractions timed.")
    var retractions = 500

    @Option(help: "Retractions sent first and not timed (the first opens the APNs connection).")
    var warmUp = 20

    func run() async throws {
        guard layout == "all" || layout == "split" else { throw ValidationError("--layout \(layout): all or split") }
        try await ServeStage.with(
            options, folder: "latency-\(layout)", app: "latency", keyID: "LATENCYK01", teamID: "LATENCYT01", scopes: "record,retract"
        ) { stage in
            let api: API
            if layout == "all" {
                api = try await stage.serve(["--mode", "all"], name: "serve")
            } else {
                _ = try await stage.serve(["--mode", "workers"], name: "workers")
                api = try await stage.serve(["--mode", "api"], name: "api")
            }
            let total = warmUp + retractions
            let deliveries = (0..<total).map { index in
                #"{"app":"latency","reference":"lat-\#(index)","tokens":["\#(Self.token(index))"]}"#
            }
            for batch in stride(from: 0, to: total, by: 1000) {
                try await api.post("/v1/deliveries", "[" + deliveries[batch..<min(batch + 1000, total)].joined(separator: ",") + "]")
            }
            var latencies: [Double] = []
            var answers: [Double] = []
            for index in 0..<total {
                let started = Date()
                try await api.post("/v1/retractions", #"{"app":"latency","references":["lat-\#(index)"]}"#)
                let answered = Date()
                let received = try await Self.firstPush(to: Self.token(index), on: stage.simulator, within: .seconds(30))
                guard index >= warmUp else { continue }
                latencies.append(received.timeIntervalSince(started) * 1000)
                answers.append(answered.timeIntervalSince(started) * 1000)
            }
            latencies.sort()
            answers.sort()
            let figures: [String: Double] = [
                "p50": Self.percentile(latencies, 0.50), "p99": Self.percentile(latencies, 0.99), "max": latencies.last ?? 0,
                "answerP50": Self.percentile(answers, 0.50), "retractions": Double(latencies.count),
            ]
            let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
            print(String(decoding: json, as: UTF8.self))
        }
    }

    /// The distinct token of the `index`th device: `a`, then the index in
    /// hex padded with zeros (padded with `a`s, index 0xa0 was index 0's).
    static func token(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return "a" + String(repeating: "0", count: 63 - hex.count) + hex
    }

    /// When the simulator accepted the first push to `token`.
    static func firstPush(to token: String, on simulator: APNsSimulator, within limit: Duration) async throws -> Date {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let push = simulator.inbox(for: token).first { return push.receivedAt }
            try await Task.sleep(for: .microseconds(200))
        }
        throw CommandFailure("no push reached \(token) within \(limit)")
    }

    /// The nearest-rank percentile of sorted `values`.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let rank = Int((fraction * Double(values.count)).rounded(.up))
        return values[min(max(rank, 1), values.count) - 1]
    }

    /// The API as the benchmark calls it: a POST with the key, 2xx or an error.
    struct API {
        let http: HTTPClient
        let base: String
        let key: String

        func post(_ path: String, _ body: String) async throws {
            let (status, reply) = try await answer(path, body)
            guard (200..<300).contains(status) else {
                throw CommandFailure("POST \(path): \(status) \(String(decoding: reply, as: UTF8.self))")
            }
        }

        /// A POST with the key: its status and body, whatever the status.
        func answer(_ path: String, _ body: String) async throws -> (status: Int, body: Data) {
            var request = HTTPClientRequest(url: base + path)
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await http.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), Data(answer.readableBytesView))
        }
    }
}

/// The `retract` processes a benchmark runs: commands to their end, and
/// servers in the background until ``stop()``.
final class RetractProcesses: @unchecked Sendable {
    private let binary: String
    private let folder: URL
    private let environment: [String: String]
    /// Only touched from the benchmark's one task.
    private var servers: [Process] = []

    init(binary: String, folder: URL, environment: [String: String]) {
        self.binary = binary
        self.folder = folder
        self.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }

    /// Runs `retract arguments` to its end; its standard output, or an error with its output.
    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let log = folder.appendingPathComponent("command.log")
        let process = try start(arguments, log: log)
        process.waitUntilExit()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw CommandFailure("retract \(arguments.prefix(2).joined(separator: " ")) exited \(process.terminationStatus): \(output)")
        }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `retract serve …` and returns the port from its "listening on" line.
    func serve(_ arguments: [String], name: String) async throws -> Int {
        let log = folder.appendingPathComponent("\(name).log")
        let process = try start(arguments, log: log)
        servers.append(process)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, process.isRunning {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("listening on http://") }),
                let port = line.split(separator: ":").last?.split(separator: " ").first.flatMap({ Int($0) })
            {
                return port
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CommandFailure(
            "retract \(arguments.joined(separator: " ")) did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    /// SIGTERM to each server, and waits for it.
    func stop() async {
        for process in servers.reversed() where process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        servers = []
    }

    private func start(_ arguments: [String], log: URL) throws -> Process {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }
}
