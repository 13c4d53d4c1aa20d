import Logging
import PostgresNIO
import RetractModel

/// Applies sql/'s migrations in order, each in its own transaction, and
/// records them in `retract_schema_migrations`.
///
/// Holds a session advisory lock meanwhile, so two processes migrating at once
/// take turns and the second finds nothing left to do. Refuses a database that
/// has a migration this binary does not know, or one whose SQL changed since it
/// was applied.
package struct MigrationRunner: Sendable {
    package var migrations: [Migration]

    /// An arbitrary constant, the same in every Retract binary.
    static let advisoryLockKey: Int64 = 0x5245_5452_4143_54

    package init(migrations: [Migration] = Migration.all) {
        self.migrations = migrations
    }

    /// The versions applied by this call, in order; empty when the database was current.
    @discardableResult
    package func migrate(_ store: RetractStore) async throws(StoreError) -> [Migration] {
        // A migration may take long on a large ledger: it has no answer limit.
        try await store.perform("migrating the database", idempotent: false, answerLimit: nil) { [self] in
            try await store.client.withConnection { connection in
                try await migrate(on: connection, logger: store.logger)
            }
        }
    }

    /// The migrations not yet applied; throws when the database is ahead of or
    /// different from this binary.
    package func pending(_ store: RetractStore) async throws(StoreError) -> [Migration] {
        try await store.perform("reading the schema version", idempotent: true) { [self] in
            try await store.client.withConnection { connection in
                try await pending(on: connection, logger: store.logger)
            }
        }
    }

    private func migrate(on connection: PostgresConnection, logger: Logger) async throws -> [Migration] {
        // A current database is only read: a standby (a server pointed at one after a failover) starts, and says it takes no writes.
        guard try await !pending(on: connection, logger: logger).isEmpty else { return [] }
        try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
        do {
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS retract_schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    checksum   bytea NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            )
            let pending = try await pending(on: connection, logger: logger)
            for migration in pending {
                try await apply(migration, on: connection, logger: logger)
            }
            try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
            return pending
        } catch {
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
            throw error
        }
    }

    private func pending(on connection: PostgresConnection, logger: Logger) async throws -> [Migration] {
        let exists =
            try await connection.rows("SELECT to_regclass('retract_schema_migrations') IS NOT NULL", logger: logger)
            .values(of: Bool.self).first ?? false
        guard exists else { return migrations }
        var applied: [Int: (name: String, checksum: [UInt8])] = [:]
        let rows = try await connection.query(
            "SELECT version, name, checksum FROM retract_schema_migrations ORDER BY version", logger: logger)
        for try await (version, name, checksum) in rows.decode((Int, String, ByteBuffer).self) {
            applied[version] = (name, Array(checksum.readableBytesView))
        }
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, record) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw StoreError(
                    .schemaMismatch,
                    "the database has migration \(record.name) (version \(version)), which this binary does not know; run a newer retract"
                )
            }
            guard migration.checksum == record.checksum else {
                throw StoreError(
                    .schemaMismatch,
                    "migration \(migration.name) was applied with different SQL than this binary has; the database's schema is not the one it expects"
                )
            }
        }
        return migrations.filter { applied[$0.version] == nil }
    }

    private func apply(_ migration: Migration, on connection: PostgresConnection, logger: Logger) async throws {
        let statements: [String]
        do {
            statements = try SQLScript.statements(in: migration.sql)
        } catch {
            throw StoreError(.migrationFailed, "migration \(migration.name): unterminated \(error.construct) from line \(error.line)")
        }
        logger.info("applying migration", metadata: ["migration": "\(migration.name)", "statements": "\(statements.count)"])
        try await connection.query("BEGIN", logger: logger)
        do {
            for (index, statement) in statements.enumerated() {
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                } catch {
                    let cause = StoreError.from(error, during: "statement \(index + 1)")
                    throw StoreError(.migrationFailed, "migration \(migration.name), \(cause.message)", sqlState: cause.sqlState)
                }
            }
            try await connection.query(
                """
                INSERT INTO retract_schema_migrations (version, name, checksum)
                VALUES (\(migration.version), \(migration.name), \(ByteBuffer(bytes: migration.checksum)))
                """,
                logger: logger
            )
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }
}
