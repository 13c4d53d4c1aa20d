import Foundation
import Logging
import PostgresNIO
import RetractModel

extension RetractStore {
    /// Checks, once at start, what `retract serve` needs of its database
    /// connections that a connection pooler between it and PostgreSQL can
    /// take away, and refuses (``StoreError/Code/invalidInput``) naming the
    /// setting when one is missing:
    ///
    /// - **Notifications.** The workers and the device feed `LISTEN`. A
    ///   pooler in transaction or statement mode (PgBouncer's
    ///   `pool_mode = transaction`) hands the listening session's server
    ///   connection to others after each statement, and the notification
    ///   never comes back: a `pg_notify` made on one connection must reach a
    ///   `LISTEN` on another within `patience` (not checked on a standby,
    ///   which takes neither).
    /// - **The read connections' `statement_timeout`**, a startup parameter
    ///   (``ReadPool``): PgBouncer refuses a startup parameter it does not
    ///   know, or drops it when told to ignore it. The read connections must
    ///   start with the timeout asked for.
    ///
    /// Named prepared statements (the device feed's) and the migrations'
    /// advisory lock also need a session; a pooler that keeps the session
    /// (PgBouncer's `pool_mode = session`) keeps them, and one that does not
    /// fails the first check. docs/operations.md gives a configuration that passes.
    package static func checkSessionFeatures(
        url: DatabaseURL, readURL: DatabaseURL?, readTimeout: Duration?, patience: Duration = .seconds(3), logger: Logger
    ) async throws(StoreError) {
        if let readTimeout { try await checkReadTimeout(on: readURL ?? url, readTimeout, logger: logger) }
        try await checkNotificationsArrive(on: url, within: patience, logger: logger)
    }

    private static func checkReadTimeout(on url: DatabaseURL, _ timeout: Duration, logger: Logger) async throws(StoreError) {
        let milliseconds = Int((timeout / .milliseconds(1)).rounded(.up))
        let flag = "--read-timeout"
        let found: Int
        do {
            var configuration = try url.connectionConfiguration()
            configuration.options.additionalStartupParameters = [("statement_timeout", "\(milliseconds)")]
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            defer { Task { try? await connection.close() } }
            var value = 0
            let rows = try await connection.query(
                "SELECT setting::bigint FROM pg_settings WHERE name = 'statement_timeout'", logger: logger)
            for try await setting in rows.decode(Int.self) { value = setting }
            found = value
        } catch {
            let mapped = StoreError.from(error, during: "starting a read connection")
            guard mapped.message.contains("unsupported startup parameter") else { throw mapped }
            throw StoreError(
                .invalidInput,
                "the read connections start with statement_timeout = \(milliseconds) ms (\(flag)), and the database at \(url) refused it (\(mapped.message)): a pooler such as PgBouncer passes no such parameter. Add statement_timeout to PgBouncer's ignore_startup_parameters and give --read-database-url a database entry whose connect_query sets it (docs/operations.md, \"Behind PgBouncer\")"
            )
        }
        guard found == milliseconds else {
            throw StoreError(
                .invalidInput,
                "the read connections to \(url) have statement_timeout = \(found) ms, not the \(milliseconds) ms they asked for (\(flag)): a pooler such as PgBouncer dropped the startup parameter (ignore_startup_parameters). Give --read-database-url a PgBouncer database entry whose connect_query sets statement_timeout = \(milliseconds) (docs/operations.md, \"Behind PgBouncer\")"
            )
        }
    }

    private static func checkNotificationsArrive(on url: DatabaseURL, within patience: Duration, logger: Logger) async throws(StoreError) {
        let channel = "retract_probe_\(UUID().uuidString.prefix(8).lowercased())"
        let outcome: Result<Bool, StoreError>? = await firstOf(
            {
                do {
                    let configuration = try url.connectionConfiguration()
                    let sender = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
                    defer { Task { try? await sender.close() } }
                    // A standby takes neither LISTEN nor NOTIFY; the server waits there until it is promoted.
                    for try await standby in try await sender.query("SELECT pg_is_in_recovery()", logger: logger).decode(Bool.self)
                    where standby {
                        return .success(true)
                    }
                    let listener = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                    defer { Task { try? await listener.close() } }
                    return .success(
                        try await listener.listen(on: channel) { notifications in
                            _ = try await sender.query("SELECT pg_notify(\(channel), 'probe')::text", logger: logger).collect()
                            for try await _ in notifications { return true }
                            return false
                        })
                } catch {
                    return .failure(StoreError.from(error, during: "checking that notifications arrive"))
                }
            },
            {
                try? await Task.sleep(for: patience)
                return nil
            })
        let advice =
            "a pooler in transaction or statement mode (PgBouncer's pool_mode = transaction) cannot carry LISTEN, which the workers and the device feed need, nor the device feed's prepared statement. Connect to PostgreSQL directly, or through PgBouncer with pool_mode = session (docs/operations.md, \"Behind PgBouncer\")"
        switch outcome {
        case .success(true): return
        case .failure(let error) where error.code == .connectionLost: throw error
        case .failure(let error):
            throw StoreError(.invalidInput, "LISTEN and NOTIFY failed on the database at \(url) (\(error.message)): \(advice)")
        case .success(false), nil:
            throw StoreError(
                .invalidInput, "a notification sent on the database at \(url) did not reach a LISTEN on it within \(patience): \(advice)")
        }
    }
}
