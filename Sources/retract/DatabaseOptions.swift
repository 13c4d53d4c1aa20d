import ArgumentParser
import Foundation
import Logging
import RetractCore
import RetractStore

/// The database a command works on: `--database-url`, else `DATABASE_URL`.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: ArgumentHelp("The PostgreSQL ledger; DATABASE_URL when not given.", valueName: "postgres://USER@HOST:PORT/DB")
    )
    var databaseURL: String?

    func url(environment: [String: String] = ProcessInfo.processInfo.environment) throws(StoreError) -> DatabaseURL {
        guard let text = databaseURL ?? environment["DATABASE_URL"], !text.isEmpty else {
            throw StoreError(.invalidInput, "no database: give --database-url or set DATABASE_URL")
        }
        return try DatabaseURL(text)
    }

    /// The URL given by flag or environment, or nil when none was; a malformed one throws.
    func givenURL(environment: [String: String] = ProcessInfo.processInfo.environment) throws(StoreError) -> DatabaseURL? {
        guard let text = databaseURL ?? environment["DATABASE_URL"], !text.isEmpty else { return nil }
        return try DatabaseURL(text)
    }

    /// Runs `body` with a store on the database, logging warnings and worse.
    func withStore<Result: Sendable>(_ body: (RetractStore) async throws -> Result) async throws -> Result {
        var logger = Logger(label: "retract")
        logger.logLevel = .warning
        return try await RetractStore.withStore(url: try url(), maximumConnections: 4, logger: logger, body)
    }
}

/// The exit codes of every command, documented in docs/configuration.md.
enum RetractExitCode {
    /// Any other error.
    static let other: Int32 = 1
    /// Bad input: an argument, a file, a URL, a payload.
    static let invalidInput: Int32 = 2
    /// Some devices could not be reached (`notification`, `send`).
    static let someFailed: Int32 = 3
    /// The database cannot be reached.
    static let unreachable: Int32 = 4
    /// The database's schema is not the one this binary knows, or a migration failed.
    static let schema: Int32 = 5
    /// No app has that name.
    static let unknownApp: Int32 = 6
    /// No delivery of the reference was recorded; or no retraction has that id.
    static let unknownReference: Int32 = 7
    /// The app's APNs key or certificate is missing or unreadable.
    static let credentials: Int32 = 8
    /// The retraction was stopped: APNs or FCM refused the app's credentials.
    static let retractionFailed: Int32 = 9

    static func of(_ error: StoreError) -> Int32 {
        switch error.code {
        case .invalidInput, .idempotencyConflict: invalidInput
        case .connectionLost: unreachable
        case .schemaMismatch, .migrationFailed: schema
        // What the store reports missing is an app (a retraction is RetractError's).
        case .notFound: unknownApp
        default: other
        }
    }

    static func of(_ error: RetractError) -> Int32 {
        switch error.code {
        case .invalidInput: invalidInput
        case .unknownApp: unknownApp
        case .unknownReference, .unknownRetraction, .unknownKey: unknownReference
        case .credentials: credentials
        case .store: error.storeError.map(of) ?? other
        }
    }
}

extension ParsableCommand {
    /// Prints `error` as one line naming the command and returns its exit code.
    func fail(_ command: String, _ error: any Error) -> ExitCode {
        switch error {
        case let error as StoreError:
            printError("retract \(command): \(error.message)")
            return ExitCode(RetractExitCode.of(error))
        case let error as RetractError:
            printError("retract \(command): \(error.message)")
            return ExitCode(RetractExitCode.of(error))
        case let problem as InputFile.Problem:
            printError("retract \(command): \(problem)")
            return ExitCode(RetractExitCode.invalidInput)
        case let exit as ExitCode:
            return exit
        default:
            printError("retract \(command): \(error)")
            return ExitCode(RetractExitCode.other)
        }
    }
}
