import Foundation
import Logging
import PostgresNIO
import RetractModel
import RetractStore
import Testing

@Suite("retract migrate")
struct MigrateCommandTests {
    private static var logger: Logger {
        var logger = Logger(label: "retract.cli.tests")
        logger.logLevel = .warning
        return logger
    }

    private func withScratchDatabase(_ body: (DatabaseURL) async throws -> Void) async throws {
        guard let server = ProcessInfo.processInfo.environment["RETRACT_TEST_DATABASE_URL"] else {
            throw CLIError("RETRACT_TEST_DATABASE_URL is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL")
        }
        try await RetractStore.withScratchDatabase(on: try DatabaseURL(server), logger: Self.logger, body)
    }

    @Test func migratesThenSaysTheLedgerIsUpToDate() async throws {
        try await withScratchDatabase { url in
            let first = try RetractCLI.run(["migrate", "--database-url", "\(url.withPassword)"])
            #expect(first.status == 0, "\(first.stderr)")
            // Every migration this binary knows, in order, then nothing more to do.
            #expect(first.stdout == Migration.all.map { "applied \($0.name)\n" }.joined())
            // DATABASE_URL when no flag is given.
            let second = try RetractCLI.run(["migrate"], environment: ["DATABASE_URL": url.withPassword])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout == "the ledger is up to date (\(Migration.all.last?.name ?? ""))\n")
        }
    }

    @Test func aDatabaseAheadOfTheBinaryExitsFive() async throws {
        try await withScratchDatabase { url in
            #expect(try RetractCLI.run(["migrate", "--database-url", url.withPassword]).status == 0)
            try await RetractStore.withStore(url: url, maximumConnections: 1, logger: Self.logger) { store in
                _ = try await store.client.query(
                    "INSERT INTO retract_schema_migrations (version, name, checksum) VALUES (99, '0099_next.sql', '\\x00')",
                    logger: Self.logger
                ).collect()
            }
            let result = try RetractCLI.run(["migrate", "--database-url", url.withPassword])
            #expect(result.status == 5)
            #expect(result.stderr.contains("0099_next.sql"))
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
    }

    @Test(arguments: [
        ([String](), [String: String?]()),
        (["--database-url", "mysql://localhost/x"], [:]),
    ])
    func noOrABadDatabaseURLExitsTwo(arguments: [String], environment: [String: String?]) throws {
        let result = try RetractCLI.run(["migrate"] + arguments, environment: ["DATABASE_URL": nil].merging(environment) { $1 })
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("retract migrate: "))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    /// A password holding `/`, `#` or `?` unencoded breaks the URL's shape:
    /// the message says so without printing it.
    @Test(arguments: ["postgres://retract:s3cr/et#1@db.internal/ledger", "postgres://retract:s3cr?et@db.internal/ledger"])
    func aURLThatDoesNotParseNeverShowsItsPassword(url: String) throws {
        let result = try RetractCLI.run(["migrate", "--database-url", url], environment: ["DATABASE_URL": nil])
        #expect(result.status == 2)
        #expect(result.stderr.contains("retract:***@db.internal/ledger"), "\(result.stderr)")
        #expect(!result.stderr.contains("s3cr"), "\(result.stderr)")
        #expect(!result.stderr.contains("et#1") && !result.stderr.contains("et@"), "\(result.stderr)")
    }

    @Test func anUnreachableDatabaseExitsFourWithinSeconds() throws {
        let started = ContinuousClock.now
        // Port 9 (discard) on loopback: nothing listens there.
        let result = try RetractCLI.run(["migrate", "--database-url", "postgres://postgres@127.0.0.1:9/postgres?sslmode=disable"])
        #expect(result.status == 4)
        #expect(result.stderr.contains("cannot connect to the database at postgres://postgres@127.0.0.1:9/postgres"))
        #expect(ContinuousClock.now - started < .seconds(15))
    }
}

extension DatabaseURL {
    /// The URL as text a command line takes, password included.
    var withPassword: String {
        let credentials = username + (password.map { ":\($0)" } ?? "")
        return "postgres://\(credentials)@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)"
    }
}
