import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation

/// What a benchmark of `retract serve` is given by its script.
struct ServeBenchmarkOptions: ParsableArguments {
    @Option(help: "An empty database for the run (retract serve migrates it).")
    var databaseURL: String

    @Option(help: "The retract binary to run.")
    var retract: String

    @Option(help: "A folder for the simulator's certificates and key.")
    var work: String
}

/// The APNs simulator in this process, and `retract` run as its own
/// processes against it: a migrated database with app `app` registered at
/// the simulator and a key for it. Everything is stopped after `body`,
/// whether it throws or not.
struct ServeStage {
    let simulator: APNsSimulator
    let children: RetractProcesses
    let http: HTTPClient
    /// The key `keys create` made for the app.
    let key: String

    static func with(
        _ options: ServeBenchmarkOptions, folder name: String, app: String, keyID: String, teamID: String, scopes: String,
        simulator configuration: APNsSimulatorConfiguration = APNsSimulatorConfiguration(), _ body: (ServeStage) async throws -> Void
    ) async throws {
        let folder = URL(fileURLWithPath: options.work).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let (simulator, keyPath) = try await APNsSimulator.start(
            withNewKeyIn: folder, keyID: keyID, teamID: teamID, configuration: configuration)
        let environment = ["DATABASE_URL": options.databaseURL, "APNS_CA_FILE": folder.appendingPathComponent("simulator-ca.pem").path]
        let children = RetractProcesses(binary: options.retract, folder: folder, environment: environment)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try children.run(["migrate"])
            try children.run([
                "apps", "add", app, "--topic", "com.example.\(app)", "--environment", "sandbox",
                "--endpoint", "https://127.0.0.1:\(simulator.port)", "--key-id", keyID, "--team-id", teamID, "--key-path", keyPath,
            ])
            let created = try children.run(["keys", "create", "--app", app, "--scopes", scopes, "--name", app])
            guard let key = created.split(separator: "\n").last.map(String.init), key.hasPrefix("rk_") else {
                throw CommandFailure("retract keys create printed no key: \(created)")
            }
            try await body(ServeStage(simulator: simulator, children: children, http: http, key: key))
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

    /// `retract serve` with these extra arguments, started as `name`; the API at its port.
    func serve(_ arguments: [String], name: String) async throws -> LatencyBenchmark.API {
        let serve = ["serve", "--host", "127.0.0.1", "--port", "0", "--log-level", "warning", "--drain-timeout", "2"]
        let port = try await children.serve(serve + arguments, name: name)
        return LatencyBenchmark.API(http: http, base: "http://127.0.0.1:\(port)", key: key)
    }
}
