import PostgresNIO
import _ConnectionPoolModule

/// What went wrong in the ledger, with a stable ``code`` to switch on and a
/// message that says which operation and which value.
package struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The database cannot be reached, or the connection dropped mid-operation.
        package static let connectionLost = Code("connection_lost")
        /// PostgreSQL rolled the transaction back to break a deadlock or a
        /// serialization conflict: nothing of it was written, and trying it
        /// again is safe.
        package static let conflict = Code("transaction_conflict")
        /// A row with the same key exists.
        package static let uniqueViolation = Code("unique_violation")
        /// A row refers to one that does not exist (an unknown app, say).
        package static let foreignKeyViolation = Code("foreign_key_violation")
        /// A value the schema does not accept.
        package static let checkViolation = Code("check_violation")
        /// Input refused before it reached the database.
        package static let invalidInput = Code("invalid_input")
        /// Something the operation needs does not exist.
        package static let notFound = Code("not_found")
        /// An idempotency key reused with a different request.
        package static let idempotencyConflict = Code("idempotency_conflict")
        /// The database's schema is not the one this binary knows.
        package static let schemaMismatch = Code("schema_mismatch")
        /// A migration failed; nothing of it was applied.
        package static let migrationFailed = Code("migration_failed")
        /// PostgreSQL cancelled the statement: a `statement_timeout`, or a cancel request.
        package static let canceled = Code("canceled")
        /// A read on ``RetractStore/readClient`` ran past its pool's
        /// `statement_timeout` and was stopped (``RetractStore/ReadPool``):
        /// the read asked for too much.
        package static let readTimeout = Code("read_timeout")
        /// Any other database error.
        package static let database = Code("database")

        package let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }
    }

    package var code: Code
    /// What was being done and what was wrong, in one line.
    package var message: String
    /// PostgreSQL's SQLSTATE, when the database answered with an error.
    package var sqlState: String?

    package init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    package var description: String { message }
}

extension StoreError {
    /// Maps what PostgresNIO threw while doing `operation` to a store error.
    static func from(_ error: any Error, during operation: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let noAnswer = error as? RetractStore.NoAnswer {
            return StoreError(.connectionLost, "\(operation): no answer from the database within \(noAnswer.limit)")
        }
        if let transaction = error as? PostgresTransactionError, let underlying = transaction.underlying {
            return from(underlying, during: operation)
        }
        if let poolError = error as? ConnectionPoolError, poolError == .connectionCreationCircuitBreakerTripped {
            return StoreError(.connectionLost, "\(operation): the database has not accepted a connection for a minute")
        }
        guard let psql = error as? PSQLError else { return StoreError(.database, "\(operation): \(error)") }
        switch psql.code {
        case .server:
            let state = psql.serverInfo?[.sqlState] ?? ""
            let detail = [psql.serverInfo?[.message], psql.serverInfo?[.detail]].compactMap { $0 }.joined(separator: "; ")
            let message = "\(operation): \(detail.isEmpty ? "the database refused it" : detail)"
            switch state {
            case "23505": return StoreError(.uniqueViolation, message, sqlState: state)
            case "57014": return StoreError(.canceled, message, sqlState: state)
            case "40P01", "40001": return StoreError(.conflict, message, sqlState: state)
            case "23503": return StoreError(.foreignKeyViolation, message, sqlState: state)
            // Check and not-null violations, and text PostgreSQL cannot hold (a NUL byte, bad UTF-8, a bad date).
            case "23514", "23502", "22001", "22P02", "22023", "22021", "22P05", "22008", "22007":
                return StoreError(.checkViolation, message, sqlState: state)
            // admin_shutdown, crash_shutdown, cannot_connect_now and the connection class.
            case "57P01", "57P02", "57P03",
                _ where state.hasPrefix("08"):
                return StoreError(.connectionLost, message, sqlState: state)
            default: return StoreError(.database, message, sqlState: state)
            }
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed:
            let underlying = psql.underlying.map { ": \($0)" } ?? ""
            return StoreError(.connectionLost, "\(operation): the database connection was lost (\(psql.code))\(underlying)")
        default:
            return StoreError(.database, "\(operation): \(psql.code)")
        }
    }
}

extension PostgresTransactionError {
    /// The error that made the transaction fail.
    fileprivate var underlying: (any Error)? { closureError ?? beginError ?? commitError }
}
