import PostgresNIO
import RetractModel
import _ConnectionPoolModule

extension StoreError {
    /// Maps what PostgresNIO threw while doing `operation` to a store error.
    static func from(_ error: any Error, during operation: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let noAnswer = error as? RetractStore.NoAnswer {
            let after = noAnswer.afterLoss ? " of a lost connection" : ""
            return StoreError(.connectionLost, "\(operation): no answer from the database within \(noAnswer.limit)\(after)")
        }
        if error is RetractStore.Abandoned {
            return StoreError(.connectionLost, "\(operation): given up: the database is down")
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
