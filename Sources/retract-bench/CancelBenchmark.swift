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

    @OptionGroup var options: ServeBenchmarkOptions

    @Option(name: .customShort("n"), help: "Devices the retraction reaches.")
    var devices = 200_000

    @Option(help: "Devices sent to before the cancel.")
    var sentFirst = 2_000

    @Option(help: "The simulator's answer time, in milliseconds.")
    var latencyMs: Int64 = 20

    func run() async throws {
        try await ServeStage.with(
            options, folder: "cancel", app: "promo", keyID: "CANCELK001", teamID: "CANCELT001", scopes: "record,retract,read",
            simulator: APNsSimulatorConfiguration(faults: APNsSimulatorFaults(latency: .milliseconds(latencyMs)), recordsInbox: false)
        ) { stage in
            let api = try await stage.serve(["--mode", "all"], name: "serve")
            try await api.record("spring-sale", app: "promo", devices: devices)
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
            let lastPush = stage.simulator.statistics.lastAcceptedAt ?? started
            let sent = final["sent"] as? Int ?? 0
            let figures: [String: Double] = [
                "answer": answered.timeIntervalSince(started), "lastPush": lastPush.timeIntervalSince(started),
                "cancelled": cancelled.timeIntervalSince(started), "sentAtAnswer": Double(answer["sent"] as? Int ?? 0),
                "sent": Double(sent), "spared": Double(final["spared"] as? Int ?? 0), "total": Double(final["total"] as? Int ?? 0),
                "accepted": Double(stage.simulator.statistics.accepted),
            ]
            let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
            print(String(decoding: json, as: UTF8.self))
        }
    }
}

extension LatencyBenchmark.API {
    /// Records `reference` of `app` for devices 0..<`devices` (``LatencyBenchmark/token(_:)``), 10,000 to a request.
    func record(_ reference: String, app: String, devices: Int) async throws {
        for start in stride(from: 0, to: devices, by: 10_000) {
            let tokens = (start..<min(start + 10_000, devices)).map { "\"\(LatencyBenchmark.token($0))\"" }.joined(separator: ",")
            try await post("/v1/deliveries", #"{"app":"\#(app)","reference":"\#(reference)","tokens":[\#(tokens)]}"#)
        }
    }

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
