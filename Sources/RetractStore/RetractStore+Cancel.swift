import Foundation
import PostgresNIO
import RetractModel

extension RetractStore {
    /// Cancels a retraction: its work not in a worker's hands is dropped at
    /// once (pages not yet claimed, retries waiting, claims whose lease
    /// lapsed); the pages in flight finish their pushes, and what they would
    /// have queued next is dropped when they finish (``finishReporting(_:)``).
    /// The retraction is `cancelling` until then, `cancelled` after, with
    /// the devices not reached counted as spared. Late deliveries of its
    /// references are not retracted for it; ``forgetInFeed(_:)`` takes it
    /// out of the device feed next.
    ///
    /// The cancel is announced to the workers first, before it takes the
    /// retraction's row, which the workers finishing its pages hold in turn:
    /// their lanes stop starting pushes at once. What a lane left unsent
    /// goes back to the queue, and the cancel drops it; so a cancel that
    /// then does not hold (the retraction ended meanwhile, the transaction
    /// failed) loses no device. All of it runs on ``controlClient``.
    ///
    /// Cancelling a cancelled retraction changes nothing; cancelling one
    /// still cancelling drops what a stopped worker left and ends it if
    /// that was all.
    ///
    /// - Parameter apps: the apps whose retractions the caller may cancel;
    ///   nil for every app. Another app's retraction is not found.
    /// - Returns: the retraction, and whether this call cancelled it.
    /// - Throws: ``StoreError/Code/notFound`` for no such retraction,
    ///   ``StoreError/Code/stateConflict`` for a dry run or one that ended.
    package func cancelRetraction(
        id: UUID, by actor: String, reason: String, apps: [Int64]? = nil
    ) async throws(StoreError) -> (Retraction, cancelled: Bool) {
        if actor.isEmpty { throw StoreError(.invalidInput, "who cancels must be named") }
        if reason.isEmpty { throw StoreError(.invalidInput, "reason: say why the retraction is cancelled") }
        let notice = Self.cancelNotice + id.uuidString.lowercased()
        try await perform("announcing the cancel of retraction \(id)", idempotent: true) { [self] in
            _ = try await controlClient.query(
                """
                SELECT pg_notify(\(Self.workChannel), \(notice))::text FROM retractions
                WHERE id = \(id) AND state IN ('queued', 'sending') AND NOT dry_run
                  AND (\(apps)::bigint[] IS NULL OR app_id = ANY(\(apps)::bigint[]))
                """,
                logger: logger
            ).collect()
        }
        let cancelled = try await perform("cancelling retraction \(id)", idempotent: true) { [self] in
            try await controlClient.withTransaction(logger: logger) { connection -> Bool in
                let found = try await connection.query(
                    """
                    SELECT state, dry_run FROM retractions
                    WHERE id = \(id) AND (\(apps)::bigint[] IS NULL OR app_id = ANY(\(apps)::bigint[]))
                    FOR UPDATE
                    """,
                    logger: logger)
                var current: (state: String, dryRun: Bool)?
                for try await row in found.decode((String, Bool).self) { current = row }
                guard let current else { throw StoreError(.notFound, "no retraction \(id)") }
                if current.dryRun {
                    throw StoreError(.stateConflict, "retraction \(id) is a dry run: it sent nothing, there is nothing to cancel")
                }
                switch Retraction.State(rawValue: current.state) {
                case .cancelled?: return false
                case .cancelling?, .queued?, .sending?, .awaitingApproval?: break
                default: throw StoreError(.stateConflict, "retraction \(id) is \(current.state): it has ended, there is nothing to cancel")
                }
                // Lapsed claims are dropped too: their worker stopped, and no one finishes them otherwise.
                try await connection.query(
                    "DELETE FROM work_items WHERE retraction_id = \(id) AND (claim IS NULL OR run_after <= now())", logger: logger)
                if current.state == Retraction.State.cancelling.rawValue {
                    // Asked again: what a stopped worker left is dropped, and the cancel ends if that was all.
                    try await Self.endCancelled([id], on: connection, logger: logger)
                    return false
                }
                try await connection.query(
                    """
                    WITH cancelled AS (
                        UPDATE retractions
                        SET state = 'cancelling', cancelled_by = \(actor), cancel_reason = \(reason), cancelled_at = now(), updated_at = now(),
                            -- One awaiting approval is withdrawn; it never entered the device feed, so nothing is to leave it.
                            approval = CASE WHEN approval = 'awaiting' THEN 'withdrawn' ELSE approval END,
                            feed_forgotten = feed_forgotten OR approval IS NOT DISTINCT FROM 'awaiting'
                        WHERE id = \(id)
                        RETURNING app_id
                    )
                    INSERT INTO audit_log (actor, action, app_id, subject, details)
                    SELECT \(actor), 'retraction.cancelled', app_id, \(id.uuidString.lowercased()),
                           jsonb_build_object('reason', \(reason)::text)
                    FROM cancelled
                    """,
                    logger: logger)
                try await Self.endCancelled([id], on: connection, logger: logger)
                // Said again as it commits: a lane that looked while it had not yet believes it now.
                try await connection.query("SELECT pg_notify(\(Self.workChannel), \(notice))::text", logger: logger)
                return true
            }
        }
        let retraction = try await perform("reading retraction \(id)", idempotent: true) { [self] in
            try await Self.retractions(
                from: controlClient.query("SELECT \(unescaped: Self.retractionColumns) FROM retractions WHERE id = \(id)", logger: logger)
            ).first
        }
        guard let retraction else { throw StoreError(.notFound, "no retraction \(id)") }
        return (retraction, cancelled)
    }

    /// Takes a cancelled retraction out of the device feed (migration 0018),
    /// if it is not out already: a phone that reads its feed is not told to
    /// remove what the cancel spared it. Apart from the cancel, which stops
    /// the pushes at once: this deletes a row per device.
    ///
    /// - Returns: the rows deleted.
    @discardableResult
    package func forgetInFeed(_ id: UUID) async throws(StoreError) -> Int {
        try await perform("taking cancelled retraction \(id) out of the device feed", idempotent: true, answerLimit: nil) { [self] in
            try await client.query("SELECT retract_feed_forget(\(id))", logger: logger).values(of: Int.self).first ?? 0
        }
    }

    /// ``forgetInFeed(_:)`` for every cancelled retraction still in the
    /// feed a minute after its cancel: what a cancel whose process stopped
    /// left (the process that cancelled it takes it out at once, and is not
    /// raced for the same rows). One look through a small index when there
    /// is none.
    ///
    /// - Returns: the retractions taken out.
    @discardableResult
    package func forgetCancelledInFeed() async throws(StoreError) -> [UUID] {
        let left = try await perform("finding cancelled retractions still in the device feed", idempotent: true) { [self] in
            try await client.query(
                """
                SELECT id FROM retractions
                WHERE state IN ('cancelling', 'cancelled') AND NOT feed_forgotten AND cancelled_at < now() - interval '1 minute'
                """,
                logger: logger
            ).values(of: UUID.self)
        }
        for id in left { try await forgetInFeed(id) }
        return left
    }

    /// Ends the cancelling retractions among `ids` that have no work left:
    /// `cancelled`, the devices not reached counted as spared.
    ///
    /// - Returns: the retractions it ended.
    @discardableResult
    static func endCancelled(_ ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> [UUID] {
        try await connection.rows(
            """
            UPDATE retractions r
            SET state = 'cancelled', spared = greatest(r.total - r.sent - r.dead - r.failed, 0), retrying = 0,
                finished_at = now(), updated_at = now()
            WHERE r.id = ANY(\(ids)::uuid[]) AND r.state = 'cancelling'
              AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.retraction_id = r.id)
            RETURNING r.id
            """,
            logger: logger
        ).values(of: UUID.self)
    }

    /// Whether the retraction is being cancelled, read under a share lock
    /// held to the end of the transaction: a cancel waits for this
    /// transaction, or this one for the cancel, so work is never queued for
    /// a retraction whose cancel has dropped its work already.
    static func isCancelling(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let states = try await connection.rows("SELECT state FROM retractions WHERE id = \(id) FOR SHARE", logger: logger).values(
            of: String.self)
        return states.first == Retraction.State.cancelling.rawValue
    }

    /// The condition, on a retraction `r`, that it takes deliveries: not a
    /// dry run, not cancelled, and not (or not yet) refused approval. The device feed, the late-delivery rule
    /// and the history pushes carry read retractions through it.
    static let takesDeliveries =
        "NOT r.dry_run AND r.edit_body IS NULL AND r.state NOT IN ('cancelling', 'cancelled', 'awaiting-approval', 'rejected', 'expired')"
}
