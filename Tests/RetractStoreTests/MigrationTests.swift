import Foundation
import PostgresNIO
import RetractKit
import RetractModel
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
                #expect(
                    try await Fixture.scalar(store, "SELECT to_regclass(\(table)) IS NOT NULL", as: Bool.self) == true, "table \(table)")
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
            let broken = Migration(
                version: 1, name: "0001_broken.sql", sql: "CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;")
            let error = await #expect(throws: StoreError.self) { try await MigrationRunner(migrations: [broken]).migrate(store) }
            #expect(error?.code == .migrationFailed)
            #expect(error?.message.contains("0001_broken.sql, statement 2") == true)
            let halfDoneIsGone = try await Fixture.scalar(store, "SELECT to_regclass('half_done') IS NULL", as: Bool.self)
            #expect(halfDoneIsGone == true)
            let pending = try await MigrationRunner(migrations: [broken]).pending(store)
            #expect(pending.count == 1)
        }
    }

    @Test func migration15ListsTheNotificationsKeptAndWordsTheWebhookErrorsStored() async throws {
        try await TestDatabase.withStore(migrated: false) { store, _ in
            let beforeList = MigrationRunner(migrations: Migration.all.filter { $0.version < 15 })
            try await beforeList.migrate(store)
            let chat = try await Self.appAsItWas(store)
            let now = Date()
            try await Self.recordAsItWas(
                (0..<3).map {
                    Delivery(
                        appID: chat.id, reference: "m-1", token: Fixture.token($0), sentAt: now.addingTimeInterval(Double($0 - 10)),
                        labels: DeliveryLabels(thread: $0 == 0 ? nil : "c-\($0)"))
                } + Fixture.deliveries(app: chat, reference: "m-2", tokens: 0..<2, at: now), on: store)
            #expect(try await Fixture.scalar(store, "SELECT to_regclass('notifications') IS NULL", as: Bool.self) == true)
            for raw in [
                "read(descriptor:pointer:size:): Connection reset by peer (errno: 104)",
                "connect(descriptor:addr:size:): Connection refused (errno: 111); given up after 5 attempts",
                "the receiver answered 500", "NIOSSLError.handshakeFailed(BoringSSLError.sslError([...]))",
            ] {
                // Written as the code of the time wrote it.
                let retraction = UUID()
                try await TestDatabase.execute(
                    """
                    INSERT INTO retractions (id, app_id, refs, requested_by, dry_run, state)
                    VALUES ('\(retraction.uuidString)', \(chat.id), '{m-1}', 'test', true, 'done')
                    """, on: store)
                try await TestDatabase.execute(
                    """
                    INSERT INTO webhook_deliveries (retraction_id, app_id, url, last_error)
                    VALUES ('\(retraction.uuidString)', \(chat.id), 'https://hooks.example.com/r', '\(raw)')
                    """, on: store)
            }

            try await MigrationRunner().migrate(store)
            let page = try await store.notificationPage(NotificationQuery(limit: 10))
            #expect(page.notifications.map(\.reference) == ["m-2", "m-1"])
            let first = try #require(page.notifications.last)
            // Its first send, its last, and the thread of its earliest delivery that had one.
            #expect(abs(first.firstSentAt.timeIntervalSince(now.addingTimeInterval(-10))) < 0.001)
            #expect(abs(first.lastSentAt.timeIntervalSince(now.addingTimeInterval(-8))) < 0.001)
            #expect(first.thread == "c-1" && first.devices == 3)
            let worded = try await store.client.query(
                "SELECT last_error FROM webhook_deliveries ORDER BY last_error", logger: TestDatabase.logger)
            var after: [String] = []
            for try await error in worded.decode(String.self) { after.append(error) }
            #expect(
                after == [
                    "TLS handshake failed", "connection refused; given up after 5 attempts", "connection reset",
                    "the receiver answered 500",
                ])
        }
    }

    /// Retractions by selector made in the week before migration 16 get
    /// what they took, and its days; older ones, dry runs and retractions by
    /// reference get nothing.
    @Test func migration16KeepsWhatTheLastWeeksSelectorsTook() async throws {
        try await TestDatabase.withStore(migrated: false) { store, _ in
            try await MigrationRunner(migrations: Migration.all.filter { $0.version < 16 }).migrate(store)
            let chat = try await Self.appAsItWas(store)
            let hourAgo = Date().addingTimeInterval(-3600)
            try await Self.recordAsItWas(
                ["a", "b", "c"].map {
                    Delivery(
                        appID: chat.id, reference: ReferenceID($0), token: Fixture.token(0), sentAt: hourAgo,
                        labels: DeliveryLabels(sender: $0 == "c" ? "other" : "spammer"))
                }, on: store)
            // As the code of the time wrote them: no references, no days, for a selector.
            for (name, age, dryRun) in [("recent", "1 hour", false), ("old", "8 days", false), ("dry", "1 hour", true)] {
                try await TestDatabase.execute(
                    """
                    INSERT INTO retractions (id, app_id, refs, requested_by, dry_run, state, total, selector_kind, selector_value,
                                             sent_before, created_at)
                    VALUES (gen_random_uuid(), \(chat.id), '{}', '\(name)', \(dryRun), 'done', 1, 'sender', 'spammer',
                            now(), now() - interval '\(age)')
                    """, on: store)
            }
            try await MigrationRunner().migrate(store)
            let rows = try await store.client.query(
                """
                SELECT requested_by, coalesce(array_to_string(taken_refs, ','), '-'), delivered_from IS NOT NULL
                FROM retractions ORDER BY requested_by
                """, logger: TestDatabase.logger)
            var found: [String] = []
            for try await (name, taken, days) in rows.decode((String, String, Bool).self) { found.append("\(name) \(taken) \(days)") }
            #expect(found == ["dry - false", "old - false", "recent a,b true"])
        }
    }

    /// Deliveries as the code of an older schema recorded them: today's store
    /// also looks for late retractions and edits, in columns it did not have.
    static func recordAsItWas(_ deliveries: [Delivery], on store: RetractStore) async throws {
        let stamp = ISO8601DateFormatter()
        stamp.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for delivery in deliveries {
            let at = "'\(stamp.string(from: delivery.sentAt))'::timestamptz"
            let labels = RetractionSelector.Kind.allCases.map { delivery.labels[$0].map { "'\($0)'" } ?? "NULL" }
            try await TestDatabase.execute("SELECT retract_ensure_delivery_partition((\(at) AT TIME ZONE 'UTC')::date)", on: store)
            try await TestDatabase.execute(
                """
                INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport, thread, sender, recipient, campaign)
                VALUES (\(delivery.appID), '\(delivery.reference.rawValue)', '\\x\(delivery.token.hex)', (\(at) AT TIME ZONE 'UTC')::date,
                        \(at), 'apns', \(labels.joined(separator: ", ")))
                """, on: store)
        }
    }

    /// App `chat` as the code of an older schema registered it: with the
    /// columns it had then, not those the store reads now.
    static func appAsItWas(_ store: RetractStore) async throws -> App {
        let id = try #require(
            try await Fixture.scalar(
                store,
                """
                INSERT INTO apps (name, topic, environment, auth_kind, key_id, team_id, key_path)
                VALUES ('chat', 'com.example.chat', 'sandbox', 'token', 'KEY1234567', 'TEAM123456', '/keys/AuthKey.p8')
                RETURNING id
                """, as: Int64.self))
        return App(
            id: id, name: "chat", topic: "com.example.chat", environment: .sandbox, dialect: .canonical,
            authentication: .token(keyID: "KEY1234567", teamID: "TEAM123456", keyPath: "/keys/AuthKey.p8"), createdAt: Date())
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
