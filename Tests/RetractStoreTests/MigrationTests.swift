import Foundation
import PostgresNIO
import RetractStore
import RetractTestSupport
import Testing

@Suite("Migrations")
struct MigrationTests {
    @Test func migratesAnEmptyDatabaseAndARerunDoesNothing() async throws {
        try await TestDatabase.withStore(migrated: false) { store, _ in
            #expect(try await MigrationRunner().pending(store).map(\.version) == Migration.all.map(\.version))
            let applied = try await MigrationRunner().migrate(store)
            #expect(applied.map(\.name) == Migration.all.map(\.name))
            #expect(try await MigrationRunner().migrate(store).isEmpty)
            #expect(try await MigrationRunner().pending(store).isEmpty)
            for table in ["apps", "deliveries", "dead_tokens", "retractions", "work_items", "api_keys", "api_key_apps", "audit_log"] {
                #expect(try await Fixture.scalar(store, "SELECT to_regclass(\(table)) IS NOT NULL", as: Bool.self) == true, "table \(table)")
            }
        }
    }

    @Test func concurrentMigrationsApplyEachFileOnce() async throws {
        try await TestDatabase.withStore(migrated: false) { _, url in
            let runs = try await withThrowingTaskGroup(of: [Migration].self) { group in
                for _ in 0..<4 {
                    // Separate clients, as separate processes would be.
                    group.addTask {
                        try await RetractStore.withStore(url: url, maximumConnections: 1, logger: TestDatabase.logger) { store in
                            try await MigrationRunner().migrate(store)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(runs.filter { !$0.isEmpty }.count == 1)
            #expect(runs.flatMap { $0 }.map(\.version) == Migration.all.map(\.version))
        }
    }

    @Test func refusesADatabaseWithAMigrationItDoesNotKnow() async throws {
        try await TestDatabase.withStore { store, _ in
            _ = try await store.client.query(
                "INSERT INTO retract_schema_migrations (version, name, checksum) VALUES (999, '0999_future.sql', '\\x00')",
                logger: TestDatabase.logger
            ).collect()
            let error = await #expect(throws: StoreError.self) { try await MigrationRunner().migrate(store) }
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.contains("0999_future.sql") == true)
            await #expect(throws: StoreError.self) { try await MigrationRunner().pending(store) }
        }
    }

    @Test func refusesAMigrationWhoseSQLChangedAfterItWasApplied() async throws {
        try await TestDatabase.withStore(migrated: false) { store, _ in
            var edited = Migration.all[0]
            edited.sql += "\n-- edited after release\n"
            try await MigrationRunner(migrations: [edited]).migrate(store)
            let error = await #expect(throws: StoreError.self) { try await MigrationRunner().migrate(store) }
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.contains(edited.name) == true)
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        try await TestDatabase.withStore(migrated: false) { store, _ in
            let broken = Migration(version: 1, name: "0001_broken.sql", sql: "CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;")
            let error = await #expect(throws: StoreError.self) { try await MigrationRunner(migrations: [broken]).migrate(store) }
            #expect(error?.code == .migrationFailed)
            #expect(error?.message.contains("0001_broken.sql, statement 2") == true)
            let halfDoneIsGone = try await Fixture.scalar(store, "SELECT to_regclass('half_done') IS NULL", as: Bool.self)
            #expect(halfDoneIsGone == true)
            let pending = try await MigrationRunner(migrations: [broken]).pending(store)
            #expect(pending.count == 1)
        }
    }

    @Test func everyFileInSQLIsCompiledIn() throws {
        let sqlFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../sql").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: sqlFolder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files == Migration.all.map(\.name))
        for migration in Migration.all {
            let text = try String(contentsOf: sqlFolder.appendingPathComponent(migration.name), encoding: .utf8)
            #expect(text == migration.sql, "\(migration.name) differs from the compiled-in copy")
            #expect(migration.name.hasPrefix(String(format: "%04d_", migration.version)))
        }
    }
}
