import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// Claims up to `limit` due items for `worker`, oldest due first, with
    /// `FOR UPDATE SKIP LOCKED` so concurrent claimers never get the same item.
    /// An item not finished, split or released within `lease` is due again for
    /// any worker. With `retractions`, only their items are claimed.
    package func claimWork(
        worker: String, limit: Int, lease: Duration, retractions: [UUID]? = nil
    ) async throws(StoreError) -> [ClaimedWorkItem] {
        let claim = UUID()
        let leaseMilliseconds = lease.milliseconds
        // Not idempotent, but safe to report: a claim that happened unseen comes back when its lease ends.
        return try await perform("claiming work", idempotent: false) { [self] in
            let rows = try await client.query(
                """
                WITH due AS (
                    SELECT id FROM work_items
                    WHERE run_after <= now() AND (\(retractions)::uuid[] IS NULL OR retraction_id = ANY(\(retractions)::uuid[]))
                    ORDER BY run_after, id
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE work_items w
                SET claim = \(claim), claimed_by = \(worker), attempts = w.attempts + 1, claims = w.claims + 1,
                    run_after = now() + \(leaseMilliseconds) * interval '1 millisecond'
                FROM due WHERE w.id = due.id
                RETURNING w.id, w.retraction_id, w.kind, w.after_token, w.through_token, w.token, w.refs, w.attempts, w.run_after, w.transport::text,
                          w.last_error, w.first_failed_at, w.waiting_since, w.claims, w.collapse_ids,
                          (SELECT r.state IN ('cancelling', 'cancelled') FROM retractions r WHERE r.id = w.retraction_id)
                """,
                logger: logger
            )
            var items: [ClaimedWorkItem] = []
            for try await row in rows {
                var columns = ColumnReader(row)
                let (id, retractionID, kind, after, through, token, refs, attempts, leaseEnds, transport) = try columns.next(
                    (Int64, UUID, String, ByteBuffer?, ByteBuffer?, ByteBuffer?, [String]?, Int, Date, String).self)
                let (lastError, firstFailedAt, waitingSince, claims, collapseIDs, cancelled) = try columns.next(
                    (String?, Date?, Date?, Int, [String]?, Bool?).self)
                let itemKind: ClaimedWorkItem.Kind
                if kind == "push", let token, let refs {
                    let references = refs.map { ReferenceID($0) }
                    var collapsing: [ReferenceID: String] = [:]
                    for (reference, collapseID) in zip(references, collapseIDs ?? []) where !collapseID.isEmpty {
                        collapsing[reference] = collapseID
                    }
                    itemKind = .push(
                        DeviceReferences(
                            token: DeviceToken(token), references: references, transport: PushService(rawValue: transport) ?? .apns,
                            collapseIDs: collapsing))
                } else {
                    itemKind = .page(after: after.map(DeviceToken.init), through: through.map(DeviceToken.init))
                }
                items.append(
                    ClaimedWorkItem(
                        id: id, retractionID: retractionID, kind: itemKind, attempts: attempts, claim: claim, leaseEnds: leaseEnds,
                        claims: claims, lastError: lastError, firstFailedAt: firstFailedAt, waitingSince: waitingSince,
                        retractionCancelled: cancelled ?? false))
            }
            return items.sorted { $0.id < $1.id }
        }
    }

    /// Finishes claimed items: each is deleted, and in the same transaction
    /// its counts are added to its retraction, its retries and the
    /// ``WorkResult/remainders`` of a page queued, and its dead tokens marked;
    /// a retraction left with no work is `done`, one with a
    /// ``WorkResult/stopReason`` is `failed`. A retraction being cancelled
    /// gets its counts but no new work, and is `cancelled` once its last
    /// item is finished. An item whose claim lapsed
    /// (another worker has it now) changes nothing.
    ///
    /// - Returns: the ids of the items that were still this worker's.
    @discardableResult
    package func finish(_ results: [WorkResult]) async throws(StoreError) -> Set<Int64> {
        try await finishReporting(results).held
    }

    /// ``finish(_:)``, also saying which retractions these items completed
    /// (`done` now) and how long each took from being made.
    package func finishReporting(_ results: [WorkResult]) async throws(StoreError) -> (held: Set<Int64>, completed: [UUID: Duration]) {
        guard !results.isEmpty else { return ([], [:]) }
        let retractionIDs = Array(Set(results.map(\.item.retractionID))).sorted { $0.uuidString < $1.uuidString }
        let ids = results.map(\.item.id)
        let claims = results.map(\.item.claim)
        return try await perform("finishing \(results.count) work items", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                // Locking the retractions first, in one order, serialises the
                // workers that finish one retraction's last items.
                var appIDs: [UUID: Int64] = [:]
                var cancelling: Set<UUID> = []
                let locked = try await connection.query(
                    "SELECT id, app_id, state FROM retractions WHERE id = ANY(\(retractionIDs)::uuid[]) ORDER BY id FOR UPDATE",
                    logger: logger)
                for try await (id, appID, state) in locked.decode((UUID, Int64, String).self) {
                    appIDs[id] = appID
                    if state == Retraction.State.cancelling.rawValue { cancelling.insert(id) }
                }

                let deleted = Set(
                    try await connection.rows(
                        """
                        DELETE FROM work_items w USING unnest(\(ids)::bigint[], \(claims)::uuid[]) AS c (id, claim)
                        WHERE w.id = c.id AND w.claim = c.claim
                        RETURNING w.id
                        """,
                        logger: logger
                    ).values(of: Int64.self))

                var finished = FinishedWork(results.filter { deleted.contains($0.item.id) }, appIDs: appIDs)
                finished.queueNothing(for: cancelling)
                try await Self.insertRetries(finished.retries, on: connection, logger: logger)
                for (retractionID, remainder) in finished.remainders {
                    try await Self.insertRemainder(remainder, of: retractionID, on: connection, logger: logger)
                }
                try await Self.addFailures(finished.failures, on: connection, logger: logger)
                for (appID, tokens) in finished.dead {
                    try await Self.markDead(tokens, appID: appID, on: connection, logger: logger)
                }
                for (id, reason) in finished.stops {
                    try await Self.fail(id, reason: reason, on: connection, logger: logger)
                }
                let completed = try await Self.settle(finished, on: connection, logger: logger)
                return (deleted, completed)
            }
        }
    }

    /// Narrows a claimed page to the devices up to `token`, and queues the
    /// rest of the page as a new item another worker can take at once; for a
    /// retraction being cancelled, the rest is dropped.
    ///
    /// - Returns: false when the claim lapsed; nothing changed then.
    package func splitPage(_ item: ClaimedWorkItem, at token: DeviceToken) async throws(StoreError) -> Bool {
        guard case .page(let after, let through) = item.kind else {
            throw StoreError(.invalidInput, "work item \(item.id) is not a page")
        }
        if let after, token <= after { throw StoreError(.invalidInput, "split point \(token) is not after the page's start \(after)") }
        let split = ByteBuffer(bytes: token.bytes)
        let rest = through.map { ByteBuffer(bytes: $0.bytes) }
        return try await perform("splitting work item \(item.id)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let cancelling = try await Self.isCancelling(item.retractionID, on: connection, logger: logger)
                let narrowed = try await connection.rows(
                    "UPDATE work_items SET through_token = \(split) WHERE id = \(item.id) AND claim = \(item.claim) RETURNING id",
                    logger: logger
                ).values(of: Int64.self)
                guard !narrowed.isEmpty else { return false }
                guard !cancelling else { return true }
                try await connection.query(
                    """
                    INSERT INTO work_items (retraction_id, kind, after_token, through_token)
                    VALUES (\(item.retractionID), 'page', \(split), \(rest))
                    """,
                    logger: logger
                )
                return true
            }
        }
    }

    /// Gives a claimed item back to the queue unfinished: due after the
    /// reason's delay by the database's clock, the claim counted as an
    /// attempt only when working on it failed. An unreachable service's
    /// devices are recorded as waiting for it, since the first time in a row.
    ///
    /// An item of a retraction being cancelled is dropped instead, and the
    /// retraction ends `cancelled` if it was its last. Only that takes the
    /// retraction's row: an item given back while a cancel commits is
    /// queued, and the claim that takes it next says its retraction is
    /// cancelling (``ClaimedWorkItem/retractionCancelled``), so that its
    /// worker gives it back to be dropped.
    ///
    /// - Returns: false when the claim lapsed (or the item was finished).
    @discardableResult
    package func release(_ item: ClaimedWorkItem, _ reason: ReleaseReason) async throws(StoreError) -> Bool {
        let (delay, counted, error, waiting) = reason.effect
        let milliseconds = max(delay.milliseconds, 0)
        return try await perform("releasing work item \(item.id)", idempotent: true) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                // A cancel is never undone, so a state read without a lock holds. The drop locks the row
                // (FOR UPDATE): two releases of the last two items would each still see the other's under
                // share locks, and neither would end the cancel.
                let state = try await connection.rows(
                    "SELECT state FROM retractions WHERE id = \(item.retractionID)", logger: logger
                ).values(of: String.self).first
                if let state, Retraction.State(rawValue: state)?.isCancel == true {
                    _ = try await connection.rows(
                        "SELECT id FROM retractions WHERE id = \(item.retractionID) FOR UPDATE", logger: logger
                    ).values(of: UUID.self)
                    let dropped = try await connection.rows(
                        "DELETE FROM work_items WHERE id = \(item.id) AND claim = \(item.claim) RETURNING id", logger: logger
                    ).values(of: Int64.self)
                    try await Self.endCancelled([item.retractionID], on: connection, logger: logger)
                    return !dropped.isEmpty
                }
                return
                    !(try await connection.rows(
                        """
                        UPDATE work_items
                        SET claim = NULL, claimed_by = NULL, run_after = clock_timestamp() + \(milliseconds) * interval '1 millisecond',
                            attempts = CASE WHEN \(counted) THEN attempts ELSE greatest(attempts - 1, 0) END,
                            claims = CASE WHEN \(counted) THEN claims ELSE greatest(claims - 1, 0) END,
                            last_error = \(error),
                            waiting = coalesce(\(waiting)::integer, waiting),
                            waiting_since = CASE WHEN \(waiting)::integer IS NULL THEN waiting_since
                                                 WHEN \(waiting)::integer = 0 THEN NULL
                                                 ELSE coalesce(waiting_since, now()) END
                        WHERE id = \(item.id) AND claim = \(item.claim)
                        RETURNING id
                        """,
                        logger: logger
                    ).values(of: Int64.self).isEmpty)
            }
        }
    }

    /// Gives up on a claimed item: its devices count as failed with `reason`
    /// (those of a page known dead, as dead and skipped, as a page read would
    /// have counted them), in the transaction that deletes it (see
    /// ``finish(_:)``). For a work item that never finishes (a poison item)
    /// or waited too long for its service.
    ///
    /// - Returns: how many devices were counted failed; 0 when the claim lapsed.
    @discardableResult
    package func giveUp(_ item: ClaimedWorkItem, of retraction: Retraction, reason: String) async throws(StoreError) -> Int {
        var (live, dead) = (1, 0)
        if case .page(let after, let through) = item.kind {
            let lower = ByteBuffer(bytes: after?.bytes ?? [])
            let upper = ByteBuffer(bytes: through?.bytes ?? Self.pastEveryToken)
            (live, dead) = try await deviceCounts(of: retraction, after: lower, through: upper)
        }
        let result = WorkResult.givingUp(item, reason: reason, devices: live + dead, dead: dead)
        return try await finish([result]).contains(item.id) ? result.counts.failed : 0
    }

    /// Moves the end of these claims' lease to `lease` from now.
    ///
    /// - Returns: the ids still held.
    @discardableResult
    package func extendLease(_ items: [ClaimedWorkItem], by lease: Duration) async throws(StoreError) -> Set<Int64> {
        guard !items.isEmpty else { return [] }
        let leaseMilliseconds = lease.milliseconds
        let ids = items.map(\.id)
        let claims = items.map(\.claim)
        return try await perform("extending \(items.count) leases", idempotent: true) { [self] in
            Set(
                try await client.query(
                    """
                    UPDATE work_items w SET run_after = now() + \(leaseMilliseconds) * interval '1 millisecond'
                    FROM unnest(\(ids)::bigint[], \(claims)::uuid[]) AS c (id, claim)
                    WHERE w.id = c.id AND w.claim = c.claim
                    RETURNING w.id
                    """,
                    logger: logger
                ).values(of: Int64.self))
        }
    }

    /// How many items are queued, due or not: for metrics and tests.
    package func queuedWorkCount(retractionID: UUID? = nil) async throws(StoreError) -> Int {
        try await perform("counting queued work", idempotent: true) { [self] in
            try await client.query(
                "SELECT count(*) FROM work_items WHERE \(retractionID)::uuid IS NULL OR retraction_id = \(retractionID)", logger: logger
            ).values(of: Int.self).first ?? 0
        }
    }

    private static func addFailures(_ failures: [UUID: [String: Int]], on connection: PostgresConnection, logger: Logger) async throws {
        let rows = failures.flatMap { id, reasons in reasons.filter { $0.value > 0 }.map { (id, $0.key, $0.value) } }
        guard !rows.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO retraction_failures (retraction_id, reason, devices)
            SELECT * FROM unnest(\(rows.map(\.0))::uuid[], \(rows.map(\.1))::text[], \(rows.map(\.2))::bigint[])
            ON CONFLICT (retraction_id, reason) DO UPDATE SET devices = retraction_failures.devices + excluded.devices
            """,
            logger: logger
        )
    }

    /// Adds each retraction's counts and pushes, and ends those left with no
    /// work: `done`, or `cancelled` with the devices not reached spared. One
    /// statement under the retractions' row locks, which every worker
    /// finishing an item of the same retraction waits for: the fewer round
    /// trips held, the sooner a cancel or a page behind it gets them. A
    /// retraction stopped in this transaction (``fail``) is left `failed`.
    ///
    /// - Returns: the retractions it completed (`done`), with how long each
    ///   took from being made.
    private static func settle(
        _ finished: FinishedWork, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID: Duration] {
        let ids = Array(finished.counts.keys)
        guard !ids.isEmpty else { return [:] }
        let counts = ids.map { finished.counts[$0]! }
        let pushes = ids.map { finished.pushes[$0] ?? PushesSent() }
        let (sent, dead, failed) = (counts.map(\.sent), counts.map(\.dead), counts.map(\.failed))
        let (skipped, retrying) = (counts.map(\.skipped), counts.map(\.retrying))
        let (total, most) = (pushes.map(\.total), pushes.map(\.mostToOneDevice))
        let (carried, leftOut) = (pushes.map(\.historyCarried), pushes.map(\.historyLeftOut))
        // The locks are held: this statement's look at the queue sees every finish before it.
        let rows = try await connection.query(
            """
            WITH d AS (
                SELECT u.*, NOT EXISTS (SELECT 1 FROM work_items w WHERE w.retraction_id = u.id) AS ends
                FROM unnest(\(ids)::uuid[], \(sent)::bigint[], \(dead)::bigint[], \(failed)::bigint[], \(skipped)::bigint[],
                            \(retrying)::bigint[], \(total)::bigint[], \(most)::bigint[], \(carried)::bigint[], \(leftOut)::bigint[])
                     AS u (id, sent, dead, failed, skipped, retrying, pushes, most, carried, left_out)
            )
            UPDATE retractions r
            SET sent = r.sent + d.sent, dead = r.dead + d.dead, failed = r.failed + d.failed, skipped = r.skipped + d.skipped,
                pushes = r.pushes + d.pushes, most_pushes = greatest(r.most_pushes, d.most),
                history_carried = r.history_carried + d.carried, history_left_out = r.history_left_out + d.left_out,
                retrying = CASE WHEN d.ends OR r.state NOT IN ('queued', 'sending', 'cancelling') THEN 0
                                ELSE greatest(r.retrying + d.retrying, 0) END,
                state = CASE WHEN d.ends AND r.state IN ('queued', 'sending') THEN 'done'
                             WHEN d.ends AND r.state = 'cancelling' THEN 'cancelled'
                             WHEN r.state = 'queued' THEN 'sending'
                             ELSE r.state END,
                spared = CASE WHEN d.ends AND r.state = 'cancelling'
                              THEN greatest(r.total - (r.sent + d.sent) - (r.dead + d.dead) - (r.failed + d.failed), 0)
                              ELSE r.spared END,
                finished_at = CASE WHEN d.ends AND r.state IN ('queued', 'sending', 'cancelling') THEN now() ELSE r.finished_at END,
                started_at = coalesce(r.started_at, now()), updated_at = now()
            FROM d
            WHERE r.id = d.id
            RETURNING r.id, r.state, (extract(epoch FROM r.finished_at - r.created_at) * 1000)::bigint
            """,
            logger: logger)
        var completed: [UUID: Duration] = [:]
        for try await (id, state, milliseconds) in rows.decode((UUID, String, Int64?).self)
        where state == Retraction.State.done.rawValue {
            completed[id] = .milliseconds(milliseconds ?? 0)
        }
        return completed
    }

    private static func insertRetries(_ retries: [(UUID, PushRetry)], on connection: PostgresConnection, logger: Logger) async throws {
        guard !retries.isEmpty else { return }
        let retractionIDs = retries.map(\.0)
        let tokens = retries.map { ByteBuffer(bytes: $0.1.device.token.bytes) }
        // One JSON array per device: arrays of arrays must be rectangular in PostgreSQL.
        let refs = try retries.map { String(decoding: try JSONEncoder().encode($0.1.device.references.map(\.rawValue)), as: UTF8.self) }
        // The collapse id of each reference, "" where there is none, in the same order.
        let collapseIDs = try retries.map { retry in
            let device = retry.1.device
            return String(decoding: try JSONEncoder().encode(device.references.map { device.collapseIDs[$0] ?? "" }), as: UTF8.self)
        }
        let delays = retries.map { max($0.1.delay.milliseconds, 0) }
        let attempts = retries.map(\.1.attempts)
        let errors = retries.map(\.1.lastError)
        let transports = retries.map(\.1.device.transport.rawValue)
        let failingSince = retries.map(\.1.failingSince)
        try await connection.query(
            """
            INSERT INTO work_items (retraction_id, kind, token, refs, run_after, attempts, last_error, transport, first_failed_at,
                                    collapse_ids)
            SELECT r, 'push', t, ARRAY(SELECT jsonb_array_elements_text(f::jsonb)), clock_timestamp() + n * interval '1 millisecond', a, e, x, s,
                   ARRAY(SELECT jsonb_array_elements_text(c::jsonb))
            FROM unnest(\(retractionIDs)::uuid[], \(tokens)::bytea[], \(refs)::text[], \(delays)::bigint[],
                        \(attempts)::integer[], \(errors)::text[], \(transports)::text[]::push_transport[], \(failingSince)::timestamptz[],
                        \(collapseIDs)::text[])
                 AS u (r, t, f, n, a, e, x, s, c)
            """,
            logger: logger
        )
    }

    private static func insertRemainder(
        _ remainder: PageRemainder, of retractionID: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let after = remainder.after.map { ByteBuffer(bytes: $0.bytes) }
        let through = remainder.through.map { ByteBuffer(bytes: $0.bytes) }
        try await connection.query(
            """
            INSERT INTO work_items (retraction_id, kind, after_token, through_token, run_after, last_error, waiting, waiting_since)
            VALUES (\(retractionID), 'page', \(after), \(through),
                    clock_timestamp() + \(max(remainder.delay.milliseconds, 0)) * interval '1 millisecond',
                    \(remainder.reason), \(remainder.waiting), CASE WHEN \(remainder.waiting) > 0 THEN now() END)
            """,
            logger: logger
        )
    }
}

extension DeviceToken {
    init(_ buffer: ByteBuffer) {
        self.init(bytes: Array(buffer.readableBytesView))
    }
}

extension Duration {
    /// Whole milliseconds, as SQL intervals take them here.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
