import ArgumentParser
import Foundation
import Logging
import RetractCore
import RetractModel
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
