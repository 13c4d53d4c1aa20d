import Foundation

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
        /// The row is not in a state that allows the operation: cancelling a
        /// retraction that has ended, say.
        package static let stateConflict = Code("state_conflict")
        /// Whoever asked for a retraction that awaits approval tried to
        /// approve or reject it: another key must.
        package static let selfApproval = Code("self_approval")
        /// The database's schema is not the one this binary knows.
        package static let schemaMismatch = Code("schema_mismatch")
        /// A migration failed; nothing of it was applied.
        package static let migrationFailed = Code("migration_failed")
        /// PostgreSQL cancelled the statement: a `statement_timeout`, or a cancel request.
        package static let canceled = Code("canceled")
        /// A read on `RetractStore.readClient` ran past its pool's
        /// `statement_timeout` and was stopped (`RetractStore.ReadPool`):
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
    /// Runs `operation`, and again every `pause` while it fails because the
    /// database cannot be reached (``Code/connectionLost``: PostgreSQL
    /// restarting), for at most `patience` or until the task is cancelled;
    /// then its last error. `lost` hears of each such failure. For a write
    /// that must not be lost to a short outage and is safe to repeat.
    package static func waitingOutLostConnections<Result>(
        for patience: Duration, pause: Duration = .seconds(1), lost: (StoreError) -> Void = { _ in },
        _ operation: () async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        let deadline = ContinuousClock.now + patience
        while true {
            do {
                return try await operation()
            } catch  where error.code == .connectionLost && ContinuousClock.now < deadline && !Task.isCancelled {
                lost(error)
                try? await Task.sleep(for: pause)
            }
        }
    }
}
