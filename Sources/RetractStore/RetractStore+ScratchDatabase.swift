import Foundation
import Logging
import PostgresNIO
import RetractModel

extension RetractStore {
    /// Creates an empty database on `server`'s PostgreSQL, runs `body` with
    /// its URL and drops it afterwards, whatever happens: for tests and
    /// benchmarks that each want a ledger of their own.
    package static func withScratchDatabase<Result: Sendable>(
        on server: DatabaseURL,
        logger: Logger,
        _ body: (DatabaseURL) async throws -> Result
    ) async throws -> Result {
        let name = "retract_scratch_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await administer(server, logger: logger, "CREATE DATABASE \(unescaped: name)")
        let result: Result
        do {
            result = try await body(server.withDatabase(name))
        } catch {
            try? await administer(server, logger: logger, "DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)")
            throw error
        }
        try await administer(server, logger: logger, "DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)")
        return result
    }

    private static func administer(_ server: DatabaseURL, logger: Logger, _ statement: PostgresQuery) async throws {
        try await withStore(url: server, maximumConnections: 1, logger: logger) { store in
            _ = try await store.client.query(statement, logger: logger).collect()
        }
    }
}
