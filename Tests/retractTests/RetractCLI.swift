import Foundation
import Testing

/// The `retract` binary that `swift build` put next to the test bundle, run
/// as a user runs it.
struct RetractCLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: URL {
        get throws {
            if let path = ProcessInfo.processInfo.environment["RETRACT_BINARY"] {
                return URL(fileURLWithPath: path)
            }
            var directory = Bundle.main.bundleURL
            // On Apple platforms the tests run inside an .xctest bundle.
            while directory.pathExtension == "xctest" || directory.lastPathComponent == "Contents" {
                directory.deleteLastPathComponent()
            }
            for candidate in [directory, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()] {
                let binary = candidate.appendingPathComponent("retract")
                if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
            }
            throw CLIError("the retract binary is not next to the test bundle in \(directory.path); build it, or set RETRACT_BINARY")
        }
    }

    /// The package's root folder, for the files under docs/.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Starts `retract` without waiting for it, its output discarded (its
    /// standard error written to `errorLog` when given): for commands that
    /// run until stopped.
    static func start(
        _ arguments: [String], in directory: URL = packageRoot, environment: [String: String] = [:], errorLog: URL? = nil
    ) throws -> Process {
        let process = Process()
        process.executableURL = try binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        if let errorLog {
            guard FileManager.default.createFile(atPath: errorLog.path, contents: nil) else {
                throw CLIError("cannot create \(errorLog.path) for the command's standard error")
            }
            process.standardError = try FileHandle(forWritingTo: errorLog)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `retract` (or `executable`) to its end. `environment` entries are
    /// added to this process's; a nil value removes the variable.
    static func run(
        _ arguments: [String], executable: URL? = nil, in directory: URL = packageRoot, environment: [String: String?] = [:]
    ) throws -> Result {
        let process = Process()
        process.executableURL = try executable ?? binary
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        process.environment = merged
        process.currentDirectoryURL = directory
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes before waiting, so a full pipe cannot block the child.
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self)
        )
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A scratch folder for a test's input files, removed afterwards.
struct ScratchFolder: ~Copyable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("retract-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String, _ contents: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try Data(contents.utf8).write(to: file)
        return file.path
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
