import Foundation
import Logging
import PostgresNIO
import RetractModel
import RetractStore

/// A database of its own for each test, on the server `scripts/test` starts
/// (RETRACT_TEST_DATABASE_URL), dropped when the test ends.
package enum TestDatabase {
    package struct NotConfigured: Error, CustomStringConvertible {
        package var description: String {
            "RETRACT_TEST_DATABASE_URL is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL"
        }
    }

    package static func serverURL() throws -> DatabaseURL {
        guard let string = ProcessInfo.processInfo.environment["RETRACT_TEST_DATABASE_URL"], !string.isEmpty else {
            throw NotConfigured()
        }
        return try DatabaseURL(string)
    }

    /// Runs `body` with a store on a new, empty database; migrated unless told otherwise.
    package static func withStore(
        migrated: Bool = true,
        retention: Retention = Retention(),
        readPool: RetractStore.ReadPool? = nil,
        feedPool: RetractStore.ReadPool? = nil,
        _ body: (RetractStore, DatabaseURL) async throws -> Void
    ) async throws {
        try await RetractStore.withScratchDatabase(on: try serverURL(), logger: logger) { url in
            try await RetractStore.withStore(
                url: url, retention: retention, maximumConnections: 6, readPool: readPool, feedPool: feedPool, logger: logger
            ) { store in
                if migrated { try await MigrationRunner().migrate(store) }
                try await body(store, url)
            }
        }
    }

    package static let logger: Logger = {
        var logger = Logger(label: "retract.store.tests")
        logger.logLevel = .warning
        return logger
    }()
}

extension TestDatabase {
    /// Runs `body` with the URL of a new, migrated database of its own, dropped afterwards.
    package static func withMigratedURL(_ body: (DatabaseURL) async throws -> Void) async throws {
        try await RetractStore.withScratchDatabase(on: try serverURL(), logger: logger) { url in
            _ = try await RetractStore.withStore(url: url, maximumConnections: 1, logger: logger) { store in
                try await MigrationRunner().migrate(store)
            }
            try await body(url)
        }
    }
}

extension TestDatabase {
    /// Runs SQL of a test's own on the store's database: a fault to inject
    /// (a trigger that fails a statement), a fact to check.
    package static func execute(_ sql: String, on store: RetractStore) async throws {
        do {
            _ = try await store.client.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
        } catch {
            // PSQLError describes itself in general terms only; a failing test should say what PostgreSQL said.
            throw HTTPCaller.CallError(description: "\(sql.prefix(200)): \(String(reflecting: error))")
        }
    }

    /// The first column of the first row of `sql`.
    package static func value<Value: PostgresDecodable & Sendable>(
        _ sql: String, of _: Value.Type = Value.self, on store: RetractStore
    ) async throws -> Value? {
        for try await value in try await store.client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(Value.self) {
            return value
        }
        return nil
    }
}
