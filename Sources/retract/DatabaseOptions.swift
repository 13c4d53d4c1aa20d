import ArgumentParser
import Foundation
import Logging
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

    /// Runs `body` with a store on the database, logging warnings and worse.
    func withStore<Result: Sendable>(_ body: (RetractStore) async throws -> Result) async throws -> Result {
        var logger = Logger(label: "retract")
        logger.logLevel = .warning
        return try await RetractStore.withStore(url: try url(), maximumConnections: 4, logger: logger, body)
    }
}

/// The exit codes every database command shares, documented in docs/cli.md.
enum DatabaseExitCode {
    /// Bad input: an argument, a file, a URL.
    static let invalidInput: Int32 = 2
    /// The database cannot be reached.
    static let unreachable: Int32 = 4
    /// The database's schema is not the one this binary knows, or a migration failed.
    static let schema: Int32 = 5
    /// Something asked for does not exist.
    static let notFound: Int32 = 6
    /// Any other database error.
    static let database: Int32 = 1

    static func of(_ error: StoreError) -> Int32 {
        switch error.code {
        case .invalidInput: invalidInput
        case .connectionLost: unreachable
        case .schemaMismatch, .migrationFailed: schema
        case .notFound: notFound
        default: database
        }
    }
}

extension AsyncParsableCommand {
    /// Prints a store error as one line and exits with its code.
    func fail(_ command: String, _ error: any Error) -> ExitCode {
        guard let error = error as? StoreError else {
            printError("retract \(command): \(error)")
            return ExitCode(DatabaseExitCode.database)
        }
        printError("retract \(command): \(error.message)")
        return ExitCode(DatabaseExitCode.of(error))
    }
}
