import Foundation
import PostgresNIO
import RetractModel

extension RetractStore {
    /// What a second key decides of a retraction awaiting approval.
    package enum ApprovalDecision: String, Sendable {
        case approve, reject
    }

    /// Approves or rejects a retraction `awaiting-approval` (migration
    /// 0020), audited with the reason (`retraction.approved`,
    /// `retraction.rejected`). Approved, it is `queued` as if made now: its
    /// devices are counted again under the references' (or the label's)
    /// locks, the device feed lists it from this transaction on, and its
    /// work is queued. Rejected, nothing of it is sent.
    ///
    /// - Parameters:
    ///   - keyID: the API key that decides; when the retraction was asked
    ///     for by a key, it must be another one. Without a key (the
    ///     command line), `actor` must not be who asked.
    ///   - apps: the apps whose retractions the caller may decide; nil for every app.
    /// - Throws: ``StoreError/Code/notFound``; ``StoreError/Code/selfApproval``
    ///   when the one who asked decides; ``StoreError/Code/stateConflict``
    ///   when it is not awaiting approval, or its window ended (it is then
    ///   `expired`, and that is committed).
    package func decideApproval(
        of id: UUID, _ decision: ApprovalDecision, by actor: String, keyID: UUID?, reason: String, apps: [Int64]? = nil
    ) async throws(StoreError) -> Retraction {
        if actor.isEmpty { throw StoreError(.invalidInput, "who decides must be named") }
        if reason.isEmpty {
            throw StoreError(.invalidInput, "reason: say why the retraction is \(decision == .approve ? "approved" : "rejected")")
        }
        let oldestKept = retention.oldestKept()
        let expiredAt = try await perform("deciding the approval of retraction \(id)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection -> Date? in
                let lapses = try await connection.rows(
                    """
                    SELECT coalesce(approval_expires_at <= now(), false) FROM retractions
                    WHERE id = \(id) AND (\(apps)::bigint[] IS NULL OR app_id = ANY(\(apps)::bigint[]))
                    FOR UPDATE
                    """,
                    logger: logger
                ).values(of: Bool.self)
                let read = try await Self.retractions(
                    from: connection.query("SELECT \(unescaped: Self.retractionColumns) FROM retractions WHERE id = \(id)", logger: logger))
                guard let lapsed = lapses.first, let retraction = read.first else { throw StoreError(.notFound, "no retraction \(id)") }
                guard retraction.state == .awaitingApproval else {
                    throw StoreError(
                        .stateConflict,
                        "retraction \(id) is \(retraction.state.rawValue): only one awaiting approval is approved or rejected")
                }
                let sameKey = keyID.map { $0 == retraction.requestedKeyID } ?? (retraction.requestedBy == actor)
                if sameKey {
                    throw StoreError(
                        .selfApproval, "retraction \(id) was asked for by \(retraction.requestedBy): another key must approve or reject it")
                }
                if lapsed {
                    try await Self.expire(ids: [id], on: connection, logger: logger)
                    return retraction.approval?.expiresAt ?? Date()
                }
                switch decision {
                case .approve:
                    try await Self.approve(retraction, by: actor, reason: reason, oldestKept: oldestKept, on: connection, logger: logger)
                case .reject: try await Self.reject(retraction, by: actor, reason: reason, on: connection, logger: logger)
                }
                return nil
            }
        }
        if let expiredAt {
            throw StoreError(
                .stateConflict, "retraction \(id) expired at \(expiredAt.formatted(.iso8601)) before it was decided; nothing was sent")
        }
        guard let retraction = try await retraction(id: id) else { throw StoreError(.notFound, "no retraction \(id)") }
        return retraction
    }

    private static func approve(
        _ retraction: Retraction, by actor: String, reason: String, oldestKept: Date, on connection: PostgresConnection, logger: Logger
    ) async throws {
        // Counted again, as when a retraction is made: deliveries recorded while it waited are its own.
        let (_, census) = try await lockAndCount(
            references: retraction.references.map(\.rawValue), selector: retraction.selector, appID: retraction.appID, dryRun: false,
            oldestKept: oldestKept, on: connection, logger: logger)
        let id = retraction.id
        try await connection.query(
            """
            WITH approved AS (
                UPDATE retractions
                SET state = CASE WHEN \(census.devices) = 0 THEN 'done' ELSE 'queued' END,
                    finished_at = CASE WHEN \(census.devices) = 0 THEN now() END,
                    approval = 'approved', decided_by = \(actor), decision_reason = \(reason), decided_at = now(),
                    -- Its place in the device feed is now, as if made now (the feed's trigger lists it).
                    created_xid = pg_current_xact_id(),
                    total = \(census.devices), matched_refs = coalesce(\(census.references), matched_refs),
                    taken_refs = coalesce(\(census.takenReferences), taken_refs),
                    delivered_from = \(census.deliveredFrom), delivered_through = \(census.deliveredThrough), updated_at = now()
                WHERE id = \(id)
                RETURNING id, app_id, state
            ),
            queued AS (
                INSERT INTO work_items (retraction_id, kind) SELECT id, 'page' FROM approved WHERE state = 'queued'
            )
            INSERT INTO audit_log (actor, action, app_id, subject, details)
            SELECT \(actor), 'retraction.approved', app_id, \(id.uuidString.lowercased()),
                   jsonb_build_object('reason', \(reason)::text, 'devices', \(census.devices)::text)
            FROM approved
            """,
            logger: logger)
    }

    private static func reject(
        _ retraction: Retraction, by actor: String, reason: String, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            WITH rejected AS (
                UPDATE retractions
                SET state = 'rejected', approval = 'rejected', decided_by = \(actor), decision_reason = \(reason), decided_at = now(),
                    finished_at = now(), updated_at = now()
                WHERE id = \(retraction.id)
                RETURNING app_id
            )
            INSERT INTO audit_log (actor, action, app_id, subject, details)
            SELECT \(actor), 'retraction.rejected', app_id, \(retraction.id.uuidString.lowercased()), jsonb_build_object('reason', \(reason)::text)
            FROM rejected
            """,
            logger: logger)
    }

    /// Ends the retractions whose approval window has passed, `expired`,
    /// each audited (`retraction.expired`, by `retract`): the server's chores
    /// run it, and a decision that comes too late does too.
    ///
    /// - Returns: the retractions expired.
    @discardableResult
    package func expireUnapproved() async throws(StoreError) -> [UUID] {
        try await perform("expiring retractions not approved in time", idempotent: true) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let due = try await connection.rows(
                    """
                    SELECT id FROM retractions WHERE state = 'awaiting-approval' AND approval_expires_at <= now()
                    ORDER BY approval_expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED
                    """,
                    logger: logger
                ).values(of: UUID.self)
                if !due.isEmpty { try await Self.expire(ids: due, on: connection, logger: logger) }
                return due
            }
        }
    }

    private static func expire(ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            WITH expired AS (
                UPDATE retractions SET state = 'expired', approval = 'expired', finished_at = now(), updated_at = now()
                WHERE id = ANY(\(ids)::uuid[]) AND state = 'awaiting-approval'
                RETURNING id, app_id, approval_expires_at
            )
            INSERT INTO audit_log (actor, action, app_id, subject, details)
            SELECT \(Self.expiryActor), 'retraction.expired', app_id, lower(id::text),
                   jsonb_build_object('expiredAt', to_char(approval_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
            FROM expired
            """,
            logger: logger)
    }

    /// Who the audit log says expired a retraction: the server itself.
    package static let expiryActor = "retract"
}
