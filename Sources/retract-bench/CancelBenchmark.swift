import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `retract-bench cancel`: how soon a cancel stops a mass retraction. A
/// retraction of N devices (200,000) runs through `retract serve --mode all`
/// (its own process) to the APNs simulator at a data centre's latency; once
/// it has sent some, `POST /v1/retractions/{id}/cancel`. Timed from just
/// before the cancel's POST: its answer, the last push the simulator
/// accepted (its own receive time; it runs in this process, so both times
/// come from one clock), and the retraction reading `cancelled`.
struct CancelBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Time a cancel of a running retraction through retract serve: its answer, the last push, the end.")

    @Option(help: "An empty database for the run (retract serve migrates it).")
    var databaseURL: String

    @Option(help: "The retract binary to run.")
    var retract: String

    @Option(help: "A folder for the simulator's certificates and key.")
    var work: String

    @Option(name: .customShort("n"), help: "Devices the retraction reaches.")
    var devices = 200_000

    @Option(help: "Devices sent to before the cancel.")
    var sentFirst = 2_000

    @Option(help: "The simulator's answer time, in milliseconds.")
    var latencyMs: Int64 = 20

    func run() async throws {
        let folder = URL(fileURLWithPath: work).appendingPathComponent("cancel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let (simulator, keyPath) = try await APNsSimulator.start(
            withNewKeyIn: folder, keyID: "CANCELK001", teamID: "CANCELT001",
            configuration: APNsSimulatorConfiguration(faults: APNsSimulatorFaults(latency: .milliseconds(latencyMs)), recordsInbox: false))
        let environment = ["DATABASE_URL": databaseURL, "APNS_CA_FILE": folder.appendingPathComponent("simulator-ca.pem").path]
        let children = RetractProcesses(binary: retract, folder: folder, environment: environment)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try children.run(["migrate"])
            try children.run([
                "apps", "add", "promo", "--topic", "com.example.promo", "--environment", "sandbox",
                "--endpoint", "https://127.0.0.1:\(simulator.port)", "--key-id", "CANCELK001", "--team-id", "CANCELT001",
                "--key-path", keyPath,
            ])
            let created = try children.run(["keys", "create", "--app", "promo", "--scopes", "record,retract,read", "--name", "bench"])
            guard let key = created.split(separator: "\n").last.map(String.init), key.hasPrefix("rk_") else {
                throw CommandFailure("retract keys create printed no key: \(created)")
            }
            let port = try await children.serve(
                ["serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning", "--drain-timeout", "2", "--mode", "all"],
                name: "serve")
            let api = LatencyBenchmark.API(http: http, base: "http://127.0.0.1:\(port)", key: key)
            for start in stride(from: 0, to: devices, by: 10_000) {
                let tokens = (start..<min(start + 10_000, devices)).map { "\"\(LatencyBenchmark.token($0))\"" }.joined(separator: ",")
                try await api.post("/v1/deliveries", #"{"app":"promo","reference":"spring-sale","tokens":[\#(tokens)]}"#)
            }
            let made = try await api.call("POST", "/v1/retractions", #"{"app":"promo","references":["spring-sale"]}"#)
            guard let id = made["id"] as? String else { throw CommandFailure("the retraction's answer has no id: \(made)") }
            _ = try await api.poll(id, within: .seconds(120)) { ($0["sent"] as? Int ?? 0) >= sentFirst }

            let started = Date()
            let answer = try await api.call("POST", "/v1/retractions/\(id)/cancel", #"{"reason":"the wrong campaign"}"#)
            let answered = Date()
            let final = try await api.poll(id, within: .seconds(60)) { $0["state"] as? String == "cancelled" }
            let cancelled = Date()
            // Pushes handed to the connection before the cancel may still be answered: wait them out.
            try await Task.sleep(for: .seconds(2))
            let lastPush = simulator.statistics.lastAcceptedAt ?? started
            let sent = final["sent"] as? Int ?? 0
            let figures: [String: Double] = [
                "answer": answered.timeIntervalSince(started), "lastPush": lastPush.timeIntervalSince(started),
                "cancelled": cancelled.timeIntervalSince(started), "sentAtAnswer": Double(answer["sent"] as? Int ?? 0),
                "sent": Double(sent), "spared": Double(final["spared"] as? Int ?? 0), "total": Double(final["total"] as? Int ?? 0),
                "accepted": Double(simulator.statistics.accepted),
            ]
            let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
            print(String(decoding: json, as: UTF8.self))
        } catch {
            await children.stop()
            try? await http.shutdown()
            try? await simulator.stop()
            throw error
        }
        await children.stop()
        try await http.shutdown()
        try await simulator.stop()
    }
}

extension LatencyBenchmark.API {
    /// `method path` with the key, and the answer's JSON object; an error unless 2xx.
    func call(_ method: String, _ path: String, _ body: String? = nil) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let answer = try await response.body.collect(upTo: 1 << 20)
        guard (200..<300).contains(Int(response.status.code)),
            let object = try JSONSerialization.jsonObject(with: Data(buffer: answer)) as? [String: Any]
        else {
            throw CommandFailure("\(method) \(path): \(response.status.code) \(String(buffer: answer))")
        }
        return object
    }

    /// Reads retraction `id` every 20 ms until `done` holds of it.
    func poll(_ id: String, within limit: Duration, until done: ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let status = try await call("GET", "/v1/retractions/\(id)")
            if done(status) { return status }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CommandFailure("retraction \(id) did not get there within \(limit)")
    }
}
