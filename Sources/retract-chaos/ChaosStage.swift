import Foundation
import Logging
import NIOConcurrencyHelpers
import RetractDevSupport
import RetractModel
import RetractStore

/// What every scenario runs on: the `retract` binary under test, a throwaway
/// PostgreSQL (which a scenario may restart), and a scratch folder. Child
/// processes are killed and the cluster removed at the end, or on Ctrl-C.
final class ChaosStage: Sendable {
    let retract: String
    /// `--log-level` of the `retract serve` processes.
    let workerLogLevel: String
    let postgres: ThrowawayPostgres
    let folder: URL
    let logger: Logger
    private let children: NIOLockedValueBox<[Int32: ChildProcess]>
    private let cleanup: SignalCleanup.Registration

    private init(
        retract: String, workerLogLevel: String, postgres: ThrowawayPostgres, folder: URL, logger: Logger,
        children: NIOLockedValueBox<[Int32: ChildProcess]>,
        cleanup: SignalCleanup.Registration
    ) {
        self.retract = retract
        self.workerLogLevel = workerLogLevel
        self.postgres = postgres
        self.folder = folder
        self.logger = logger
        self.children = children
        self.cleanup = cleanup
    }

    static func start(retract: String, workerLogLevel: String) throws -> ChaosStage {
        guard FileManager.default.isExecutableFile(atPath: retract) else {
            throw ChaosError("--retract \(retract): not an executable; build it first (swift build -c release --product retract)")
        }
        SignalCleanup.shared.install()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-chaos-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // Durable, as a production database is: a restart must not lose what was committed.
        let postgres = try ThrowawayPostgres.start(durable: true)
        var logger = Logger(label: "retract.chaos")
        logger.logLevel = .error
        let children = NIOLockedValueBox<[Int32: ChildProcess]>([:])
        let registration = SignalCleanup.shared.add {
            for child in children.withLockedValue({ Array($0.values) }) { kill(child.process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: folder)
        }
        return ChaosStage(
            retract: retract, workerLogLevel: workerLogLevel, postgres: postgres, folder: folder, logger: logger, children: children,
            cleanup: registration)
    }

    func stop(keepingLogs: Bool = false) {
        for child in children.withLockedValue({ Array($0.values) }) { child.kill() }
        SignalCleanup.shared.remove(cleanup)
        postgres.stop()
        if !keepingLogs { try? FileManager.default.removeItem(at: folder) }
    }

    /// The cluster's URL with another database.
    func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(postgres.port)/\(database)?sslmode=disable"
    }

    /// Runs `body` with a new database of its own, migrated by `retract migrate`, dropped afterwards.
    func withDatabase<Result: Sendable>(_ body: (_ url: String) async throws -> Result) async throws -> Result {
        try await RetractStore.withScratchDatabase(on: try DatabaseURL(postgres.url), logger: logger) { url in
            let text = self.url(database: url.database)
            try run(["migrate", "--database-url", text]).check("retract migrate")
            return try await body(text)
        }
    }

    /// The environment children run in: this process's, without the variables
    /// that would change what a command does unasked (an APNs key, a service account).
    static let baseEnvironment: [String: String] = ProcessInfo.processInfo.environment.filter { name, _ in
        !name.hasPrefix("APNS_") && !name.hasPrefix("FCM_") && !name.hasPrefix("RETRACT_") && name != "DATABASE_URL"
    }

    /// Runs `retract arguments` to its end.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: retract)
        process.arguments = arguments
        process.environment = Self.baseEnvironment.merging(environment) { $1 }
        let output = folder.appendingPathComponent("run-\(UUID().uuidString.prefix(8)).out")
        let errors = folder.appendingPathComponent("run-\(UUID().uuidString.prefix(8)).err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return CommandResult(
            arguments: arguments, status: process.terminationStatus,
            stdout: (try? String(contentsOf: output, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errors, encoding: .utf8)) ?? "")
    }

    /// Starts `retract arguments` in the background, its output in a log file of the folder.
    func start(_ arguments: [String], environment: [String: String], name: String) throws -> ChildProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: retract)
        process.arguments = arguments
        process.environment = Self.baseEnvironment.merging(environment) { $1 }
        let log = folder.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let child = ChildProcess(process: process, log: log)
        children.withLockedValue { $0[process.processIdentifier] = child }
        return child
    }
}

/// A `retract` process running in the background.
struct ChildProcess: Sendable {
    let process: Process
    let log: URL

    /// SIGKILL: no chance to release what it holds, as a crash or an OOM kill.
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// SIGTERM, then SIGKILL after `grace`.
    func stop(grace: Duration = .seconds(30)) async {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + grace
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        kill()
    }

    /// The last lines of its log.
    var logTail: String {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }
}

/// What a `retract` command printed and how it exited.
struct CommandResult {
    var arguments: [String]
    var status: Int32
    var stdout: String
    var stderr: String

    /// Throws with what it printed unless it exited 0.
    @discardableResult
    func check(_ what: String, allowing allowed: Set<Int32> = [0]) throws -> CommandResult {
        guard allowed.contains(status) else {
            throw ChaosError("\(what) exited \(status): \(stderr.suffix(2000))\(stdout.suffix(500))")
        }
        return self
    }

    /// The standard output as JSON.
    func json<Value: Decodable>(_ type: Value.Type) throws -> Value {
        do {
            return try JSONDecoder().decode(Value.self, from: Data(stdout.utf8))
        } catch {
            throw ChaosError("retract \(arguments.first ?? "") printed no \(Value.self): \(stdout.suffix(500)) \(stderr.suffix(500))")
        }
    }
}

struct ChaosError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
