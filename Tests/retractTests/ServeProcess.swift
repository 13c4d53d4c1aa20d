import Foundation
import NIOConcurrencyHelpers
import RetractTestSupport

/// `retract serve` as its own process: started, its port read from the line
/// it prints, stopped with SIGTERM as an orchestrator stops it.
final class ServeProcess: Sendable {
    let process: Process
    let port: Int
    /// Its log (stderr), for a failing test's message.
    let logPath: String

    var http: HTTPCaller { HTTPCaller(port: port) }

    private init(process: Process, port: Int, logPath: String) {
        self.process = process
        self.port = port
        self.logPath = logPath
    }

    /// Starts `retract serve --port 0 <arguments>` and waits until it listens.
    static func start(_ arguments: [String], environment: [String: String]) async throws -> ServeProcess {
        let process = Process()
        process.executableURL = try RetractCLI.binary
        process.arguments = ["serve", "--port", "0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("retract-serve-\(UUID().uuidString.prefix(8)).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The first line says where it listens: "retract serve: listening on http://127.0.0.1:PORT (all)".
        let seen = NIOLockedValueBox("")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty && !process.isRunning { break }
            seen.withLockedValue { $0 += String(decoding: chunk, as: UTF8.self) }
            let text = seen.withLockedValue { $0 }
            if let range = text.range(of: #"listening on http://127\.0\.0\.1:(\d+)"#, options: .regularExpression),
                let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return ServeProcess(process: process, port: port, logPath: logPath)
            }
        }
        if process.isRunning { process.terminate() }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw CLIError("retract serve did not start listening: \(seen.withLockedValue { $0 }) \(log.suffix(2000))")
    }

    /// Sends SIGTERM and waits for the exit; returns the exit status.
    func stop(timeout: Duration = .seconds(60)) async throws -> Int32 {
        process.terminate()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw CLIError("retract serve did not exit within \(timeout) of SIGTERM")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}
