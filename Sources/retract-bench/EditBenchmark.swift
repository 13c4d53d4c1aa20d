import APNsSimulator
import ArgumentParser
import Foundation

/// `retract-bench edit`: an edit's fan-out rate against a retraction's, in
/// the same run. N devices (100,000) each received two references; through
/// `retract serve --mode all` (its own process) to the APNs simulator at a
/// data centre's latency, one is edited (`POST /v1/edits`), then the other
/// retracted (`POST /v1/retractions`), each timed from just before its POST
/// to its account reading `done`.
struct EditBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Time an edit's fan-out against a retraction's of the same devices, through retract serve.")

    @OptionGroup var options: ServeBenchmarkOptions

    @Option(name: .customShort("n"), help: "Devices each reference reached.")
    var devices = 100_000

    @Option(help: "The simulator's answer time, in milliseconds.")
    var latencyMs: Int64 = 20

    func run() async throws {
        try await ServeStage.with(
            options, folder: "edit", app: "chat", keyID: "EDITBK0001", teamID: "EDITBT0001", scopes: "record,retract,read",
            simulator: APNsSimulatorConfiguration(faults: APNsSimulatorFaults(latency: .milliseconds(latencyMs)), recordsInbox: false)
        ) { stage in
            let api = try await stage.serve(["--mode", "all"], name: "serve")
            for reference in ["typo", "mistake"] { try await api.record(reference, app: "chat", devices: devices) }
            let edit = try await timed(api, "/v1/edits", #"{"app":"chat","reference":"typo","title":"Ada","body":"See you at 9?"}"#)
            let retraction = try await timed(api, "/v1/retractions", #"{"app":"chat","references":["mistake"]}"#)
            let figures: [String: Double] = [
                "editSeconds": edit.seconds, "editSent": Double(edit.sent), "editRate": Double(edit.sent) / edit.seconds,
                "retractionSeconds": retraction.seconds, "retractionSent": Double(retraction.sent),
                "retractionRate": Double(retraction.sent) / retraction.seconds,
                "accepted": Double(stage.simulator.statistics.accepted),
            ]
            let json = try JSONSerialization.data(withJSONObject: figures, options: [.sortedKeys])
            print(String(decoding: json, as: UTF8.self))
        }
    }

    /// Seconds from just before the POST to the account reading `done`, and the devices it sent to.
    private func timed(_ api: LatencyBenchmark.API, _ path: String, _ body: String) async throws -> (seconds: Double, sent: Int) {
        let started = Date()
        let made = try await api.call("POST", path, body)
        guard let id = made["id"] as? String else { throw CommandFailure("\(path) answered without an id: \(made)") }
        let done = try await api.poll(id, within: .seconds(600)) { $0["state"] as? String == "done" }
        return (Date().timeIntervalSince(started), done["sent"] as? Int ?? 0)
    }
}
