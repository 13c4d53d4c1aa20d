import ArgumentParser
import RetractModel
import RetractStore

/// `retract migrate`: applies sql/'s migrations to the ledger.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring the ledger's schema up to date.",
        discussion: """
            Applies the migrations this binary carries (sql/ in the source) that the database \
            lacks, in order, each in a transaction. Safe to run from several processes at once.

            Exit codes: 0 done; 2 no or bad database URL; 4 the database cannot be reached; \
            5 the database has a migration this binary does not know, or a migration failed.
            """
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        do {
            let applied = try await database.withStore { store in try await MigrationRunner().migrate(store) }
            if applied.isEmpty {
                print("the ledger is up to date (\(Migration.all.last?.name ?? "no migrations"))")
            } else {
                for migration in applied { print("applied \(migration.name)") }
            }
        } catch {
            throw fail("migrate", error)
        }
    }
}
