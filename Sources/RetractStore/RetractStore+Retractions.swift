import Crypto
import Foundation
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// Makes a retraction: counts its devices, and queues one work item that
    /// covers all of them, so a retraction of millions starts at once. A dry
    /// run, or one with no devices, is done when made.
    ///
    /// - Returns: the retraction, and whether it was made earlier with the
    ///   same idempotency key (nothing new was written then).
    package func createRetraction(_ request: RetractionRequest) async throws(StoreError) -> (retraction: Retraction, replayed: Bool) {
        try validate(request)
        let references = Array(Set(request.references)).sorted()
        let requestHash = ByteBuffer(bytes: Self.hash(of: request, references: references))
        if let existing = try await existingRetraction(for: request, hash: requestHash) { return (existing, true) }
        let id = UUID()
        let refs = references.map(\.rawValue)
        let oldestKept = retention.oldestKept()
        let what = request.selector.map { $0.description } ?? Self.describe(references)
        do {
            // Counted after the locks (see lockReferences and lockLabels), and written, in one
            // transaction: deliveries being recorded now are committed first, or see the retraction.
            let retraction = try await perform("creating a retraction of \(what)", idempotent: false) { [self] in
                try await client.withTransaction(logger: logger) { connection in
                    let (selector, census) = try await Self.lockAndCount(
                        references: refs, selector: request.selector, appID: request.appID, dryRun: request.dryRun,
                        oldestKept: oldestKept, on: connection, logger: logger)
                    let editThread =
                        request.edit == nil
                        ? nil : try await Self.editThread(of: refs, appID: request.appID, on: connection, logger: logger)
                    return try await Self.insert(
                        request, id: id, references: refs, selector: selector, census: census, hash: requestHash,
                        editThread: editThread, on: connection, logger: logger)
                }
            }
            return (retraction, false)
        } catch let error where error.code == .uniqueViolation && request.idempotencyKey != nil {
            // Another request with the same key got there first.
            if let existing = try await existingRetraction(for: request, hash: requestHash) { return (existing, true) }
            throw error
        } catch let error where error.code == .foreignKeyViolation {
            throw StoreError(.notFound, "app \(request.appID) does not exist")
        }
    }

    /// Takes a retraction's locks, exclusive (see ``lockReferences(apps:references:exclusive:on:logger:)``
    /// and ``lockLabels(_:exclusive:on:logger:)``), then counts what it takes, so that deliveries
    /// being recorded are committed first or see it: when it is made, and when it is approved.
    /// A selector given no end gets the present as its end: nothing sent later is taken.
    static func lockAndCount(
        references refs: [String], selector: RetractionSelector?, appID: Int64, dryRun: Bool, oldestKept: Date,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> (selector: RetractionSelector?, census: Census) {
        guard var selector else {
            try await lockReferences(apps: refs.map { _ in appID }, references: refs, exclusive: true, on: connection, logger: logger)
            return (nil, try await census(of: refs, appID: appID, dryRun: dryRun, on: connection, logger: logger))
        }
        try await lockLabels(
            [Label(appID: appID, kind: selector.kind, value: selector.value)], exclusive: true, on: connection, logger: logger)
        if selector.sentBefore == nil {
            selector.sentBefore = try await connection.rows("SELECT now()", logger: logger).values(of: Date.self).first
        }
        return (
            selector, try await census(of: selector, appID: appID, dryRun: dryRun, oldestKept: oldestKept, on: connection, logger: logger)
        )
    }

    /// What references take when a retraction is made: see ``Census``.
    private static func census(
        of refs: [String], appID: Int64, dryRun: Bool, on connection: PostgresConnection, logger: Logger
    )
        async throws -> Census
    {
        // The devices as retract_device_count counts them, and the days, in one pass.
        let rows = try await connection.query(
            """
            SELECT count(DISTINCT token), min(sent_on), max(sent_on),
                   CASE WHEN \(dryRun) THEN retract_known_dead_count(\(appID), \(refs)::text[]) ELSE 0 END
            FROM deliveries WHERE app_id = \(appID) AND reference = ANY(\(refs)::text[])
            """,
            logger: logger)
        var census = Census(devices: 0)
        for try await (devices, from, through, dead) in rows.decode((Int, UTCDay?, UTCDay?, Int).self) {
            census.devices = devices
            census.deliveredFrom = from
            census.deliveredThrough = through
            census.knownDead = dead
        }
        if dryRun { census.mostReferences = try await mostReferences(of: refs, appID: appID, on: connection, logger: logger) }
        return census
    }

    /// What an edit of `refs` (one reference) shows under: the thread its
    /// deliveries were recorded with. Refused, under the edit's lock, when
    /// the reference was retracted: a deleted message is never shown again,
    /// in any words.
    private static func editThread(
        of refs: [String], appID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws
        -> String?
    {
        let retracted = try await connection.query(
            """
            SELECT r.id FROM retractions r
            WHERE r.app_id = \(appID) AND r.refs && \(refs)::text[] AND \(unescaped: Self.takesDeliveries) LIMIT 1
            """,
            logger: logger
        ).values(of: UUID.self)
        if let retraction = retracted.first {
            throw StoreError(
                .stateConflict,
                "\(refs.joined(separator: ", ")) was retracted (retraction \(retraction.uuidString.lowercased())); a retracted message cannot be edited"
            )
        }
        return try await connection.query(
            "SELECT thread FROM deliveries WHERE app_id = \(appID) AND reference = ANY(\(refs)::text[]) AND thread IS NOT NULL LIMIT 1",
            logger: logger
        ).values(of: String.self).first
    }

    /// Writes the retraction, its one work item (unless there is nothing to
    /// send) and its audit line, in one statement.
    private static func insert(
        _ request: RetractionRequest, id: UUID, references refs: [String], selector: RetractionSelector?, census: Census,
        hash: ByteBuffer, editThread: String?, on connection: PostgresConnection, logger: Logger
    ) async throws -> Retraction {
        let subject = id.uuidString.lowercased()
        let action = request.edit == nil ? "retraction.created" : "edit.created"
        let described = selector.map { $0.description } ?? refs.map(LedgerScope.shown).joined(separator: ",")
        let rows = try await connection.query(
            """
            WITH awaits AS (
                -- Over its app's approval threshold, it waits for a second key (migration 0020).
                SELECT NOT \(request.dryRun) AND \(census.devices) > 0 AND approval_threshold < \(census.devices) AS awaits,
                       approval_window_minutes
                FROM apps WHERE id = \(request.appID)
            ),
            made AS (
                INSERT INTO retractions (id, app_id, refs, requested_by, reason, dry_run, state, total, skipped,
                                         idempotency_key, request_hash, finished_at, mode, badge,
                                         selector_kind, selector_value, sent_after, sent_before, matched_refs, most_refs,
                                         delivered_from, delivered_through, taken_refs, text,
                                         requested_key_id, approval, approval_expires_at, edit_title, edit_body, edit_thread)
                VALUES (\(id), \(request.appID), \(refs), \(request.requestedBy), \(request.reason), \(request.dryRun),
                        CASE WHEN \(request.dryRun) OR \(census.devices) = 0 THEN 'done'
                             WHEN coalesce((SELECT awaits FROM awaits), false) THEN 'awaiting-approval' ELSE 'queued' END,
                        \(census.devices),
                        \(census.knownDead), \(request.idempotencyKey), \(hash),
                        CASE WHEN \(request.dryRun) OR \(census.devices) = 0 THEN now() END, \(request.mode.rawValue), \(request.badge),
                        \(selector?.kind.rawValue), \(selector?.value), \(selector?.sentAfter), \(selector?.sentBefore), \(census.references),
                        \(census.mostReferences), \(census.deliveredFrom), \(census.deliveredThrough),
                        \(request.dryRun ? nil : census.takenReferences), \(request.text), \(request.requestedKeyID),
                        CASE WHEN (SELECT awaits FROM awaits) THEN 'awaiting' END,
                        CASE WHEN (SELECT awaits FROM awaits) THEN now() + make_interval(mins => (SELECT approval_window_minutes FROM awaits)) END,
                        \(request.edit?.title), \(request.edit?.body), \(editThread))
                RETURNING \(unescaped: Self.storedColumns)
            ),
            queued AS (
                INSERT INTO work_items (retraction_id, kind) SELECT id, 'page' FROM made WHERE state = 'queued'
            ),
            audited AS (
                INSERT INTO audit_log (actor, action, app_id, subject, details)
                SELECT \(request.requestedBy), \(action), \(request.appID), \(subject),
                       jsonb_strip_nulls(jsonb_build_object(
                           \(selector == nil ? "references" : "selector")::text, \(described)::text, 'devices', total::text,
                           'dryRun', dry_run::text, 'reason', \(request.reason)::text, 'mode', mode, 'badge', badge::text,
                           'text', text, 'approval', approval, 'title', edit_title, 'body', edit_body))
                FROM made
            )
            SELECT \(unescaped: Self.storedColumns), 0::bigint, NULL::text FROM made
            """,
            logger: logger
        )
        guard let retraction = try await Self.retractions(from: rows).first else {
            throw StoreError(.database, "creating a retraction: no row came back")
        }
        return retraction
    }

    /// A retraction, read on the primary.
    package func retraction(id: UUID) async throws(StoreError) -> Retraction? {
        try await retraction(id: id, mayLag: false)
    }

    /// A retraction; from the read replica if there is one and `mayLag`
    /// (``performReplicaRead(_:mayLag:_:)``).
    package func retraction(id: UUID, mayLag: Bool) async throws(StoreError) -> Retraction? {
        try await performReplicaRead("reading retraction \(id)", mayLag: mayLag) { [logger] client in
            try await Self.retractions(
                from: client.query("SELECT \(unescaped: Self.retractionColumns) FROM retractions WHERE id = \(id)", logger: logger)
            ).first
        }
    }

    /// Which of `ids` the ledger has as retractions (on the primary).
    package func existingRetractions(among ids: [UUID]) async throws(StoreError) -> Set<UUID> {
        guard !ids.isEmpty else { return [] }
        return try await perform("looking up \(ids.count) retractions", idempotent: true) { [self] in
            var found: Set<UUID> = []
            let rows = try await client.query("SELECT id FROM retractions WHERE id = ANY(\(ids)::uuid[])", logger: logger)
            for try await id in rows.decode(UUID.self) { found.insert(id) }
            return found
        }
    }

    /// Why devices of a retraction were given up on: devices per reason.
    package func retractionFailures(id: UUID, mayLag: Bool = false) async throws(StoreError) -> [String: Int] {
        try await performReplicaRead("reading the failures of retraction \(id)", mayLag: mayLag) { [logger] client in
            var failures: [String: Int] = [:]
            let rows = try await client.query(
                "SELECT reason, devices FROM retraction_failures WHERE retraction_id = \(id)", logger: logger)
            for try await (reason, devices) in rows.decode((String, Int).self) { failures[reason] = devices }
            return failures
        }
    }

    /// Stops a retraction: its queued work is dropped, its state is `failed`
    /// with `reason`. A retraction already finished is left as it is.
    package func failRetraction(id: UUID, reason: String) async throws(StoreError) {
        try await perform("failing retraction \(id)", idempotent: true) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                try await Self.fail(id, reason: reason, on: connection, logger: logger)
            }
        }
    }

    static func fail(_ id: UUID, reason: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            UPDATE retractions SET state = 'failed', failure = \(reason), retrying = 0, finished_at = now(), updated_at = now()
            WHERE id = \(id) AND state IN ('queued', 'sending')
            """,
            logger: logger
        )
        try await connection.query("DELETE FROM work_items WHERE retraction_id = \(id)", logger: logger)
    }

    /// What the target cannot say: its references or selector were checked
    /// when it was made (``RetractionTarget/init(references:selector:now:)``).
    private func validate(_ request: RetractionRequest) throws(StoreError) {
        if request.requestedBy.isEmpty { throw StoreError(.invalidInput, "requestedBy: who asked must be named") }
        if let badge = request.badge, badge < 0 { throw StoreError(.invalidInput, "badge: \(badge); a badge is 0 or more") }
    }

    private func existingRetraction(for request: RetractionRequest, hash: ByteBuffer) async throws(StoreError) -> Retraction? {
        guard let key = request.idempotencyKey else { return nil }
        let found = try await perform("reading idempotency key", idempotent: true) { [self] in
            let rows = try await client.query(
                """
                SELECT request_hash, \(unescaped: Self.retractionColumns) FROM retractions
                WHERE app_id = \(request.appID) AND idempotency_key = \(key)
                """,
                logger: logger
            )
            var found: (hash: ByteBuffer?, retraction: Retraction)?
            for try await row in rows {
                let storedHash = try row.decode(ByteBuffer?.self)
                found = (storedHash, try Self.retraction(from: row, offset: 1))
            }
            return found
        }
        guard let found else { return nil }
        guard found.hash == hash else {
            throw StoreError(.idempotencyConflict, "idempotency key \"\(key)\" was used for a different retraction request")
        }
        return found.retraction
    }

    /// SHA-256 over what makes two requests the same request.
    private static func hash(of request: RetractionRequest, references: [ReferenceID]) -> [UInt8] {
        var hasher = SHA256()
        var fields = [
            "\(request.appID)", references.map(\.rawValue).joined(separator: "\u{0}"), request.reason ?? "\u{1}", "\(request.dryRun)",
            request.mode.rawValue, request.badge.map(String.init) ?? "\u{1}",
        ]
        // Only a retraction with its own text adds it, so a hash kept from before texts existed still matches.
        if let text = request.text { fields.append("text:\(text)") }
        // Only an edit adds its text, so a hash kept from before edits existed still matches.
        if let edit = request.edit { fields += ["edit", edit.title ?? "\u{1}", edit.body] }
        // Only a retraction by selector adds its fields, so a hash kept from before selectors existed still matches.
        if let selector = request.selector {
            fields += [
                selector.kind.rawValue, selector.value, selector.sentAfter.map { "\($0.timeIntervalSince1970)" } ?? "\u{1}",
                selector.sentBefore.map { "\($0.timeIntervalSince1970)" } ?? "\u{1}",
            ]
        }
        for field in fields {
            hasher.update(data: Data(field.utf8))
            hasher.update(data: Data([0xFF]))
        }
        return Array(hasher.finalize())
    }

    /// The retraction's own columns, a line for each group ``retraction(from:offset:)`` reads.
    static let storedColumns = """
        id, app_id, refs, requested_by, reason, dry_run, state, failure,
        total, sent, dead, retrying, failed,
        created_at, started_at, finished_at, updated_at,
        skipped, mode, badge,
        selector_kind, selector_value, sent_after, sent_before, matched_refs, most_refs, pushes, most_pushes,
        history_carried, history_left_out,
        spared, cancelled_by, cancel_reason, cancelled_at,
        text,
        requested_key_id, approval, approval_expires_at, decided_by, decision_reason, decided_at,
        edit_title, edit_body, edit_thread
        """

    /// ``storedColumns`` and, from its queued work, the devices waiting for
    /// their service and why (the last group read): for reads `FROM retractions`.
    static let retractionColumns =
        storedColumns + """
            ,
            (SELECT coalesce(sum(w.waiting), 0)::bigint FROM work_items w WHERE w.retraction_id = retractions.id),
            (SELECT w.last_error FROM work_items w WHERE w.retraction_id = retractions.id AND w.waiting > 0
             ORDER BY w.waiting_since LIMIT 1)
            """

    static func retractions(from rows: PostgresRowSequence) async throws -> [Retraction] {
        var retractions: [Retraction] = []
        for try await row in rows { retractions.append(try retraction(from: row, offset: 0)) }
        return retractions
    }

    private static func retraction(from row: PostgresRow, offset: Int) throws -> Retraction {
        var columns = ColumnReader(row, from: offset)
        let (id, appID, refs, requestedBy, reason, dryRun, state, failure) = try columns.next(
            (UUID, Int64, [String], String, String?, Bool, String, String?).self)
        let (total, sent, dead, retrying, failed) = try columns.next((Int, Int, Int, Int, Int).self)
        let (createdAt, startedAt, finishedAt, updatedAt) = try columns.next((Date, Date?, Date?, Date).self)
        let (skipped, mode, badge) = try columns.next((Int, String, Int?).self)
        let (kind, value, sentAfter, sentBefore, matched, mostReferences, pushes, mostPushes) = try columns.next(
            (String?, String?, Date?, Date?, Int?, Int?, Int, Int).self)
        let (historyCarried, historyLeftOut) = try columns.next((Int, Int).self)
        let (spared, cancelledBy, cancelReason, cancelledAt) = try columns.next((Int, String?, String?, Date?).self)
        let text = try columns.next(String?.self)
        let (requestedKeyID, approvalState, expiresAt, decidedBy, decisionReason, decidedAt) = try columns.next(
            (UUID?, String?, Date?, String?, String?, Date?).self)
        let (editTitle, editBody, editThread) = try columns.next((String?, String?, String?).self)
        let (waiting, waitingReason) = try columns.next((Int, String?).self)
        let selector = kind.flatMap(RetractionSelector.Kind.init(rawValue:)).map { kind in
            RetractionSelector(kind, value ?? "", sentAfter: sentAfter, sentBefore: sentBefore)
        }
        return Retraction(
            id: id, appID: appID, references: refs.map { ReferenceID($0) }, selector: selector, referencesMatched: matched,
            mostReferences: mostReferences, requestedBy: requestedBy, reason: reason,
            dryRun: dryRun, state: Retraction.State(rawValue: state) ?? .failed, failure: failure,
            cancellation: cancelledAt.map { Retraction.Cancellation(by: cancelledBy ?? "", reason: cancelReason ?? "", at: $0) },
            approval: approvalState.flatMap(Retraction.Approval.State.init(rawValue:)).map { state in
                Retraction.Approval(
                    state: state, expiresAt: expiresAt, decidedBy: decidedBy, reason: decisionReason, decidedAt: decidedAt)
            },
            requestedKeyID: requestedKeyID,
            counts: RetractionCounts(
                total: total, sent: sent, dead: dead, retrying: retrying, failed: failed, skipped: skipped, waiting: waiting,
                spared: spared),
            pushes: PushesSent(
                total: pushes, mostToOneDevice: mostPushes, historyCarried: historyCarried, historyLeftOut: historyLeftOut),
            waitingReason: waitingReason, mode: RetractionMode(rawValue: mode) ?? .background, badge: badge, text: text,
            edit: editBody.map { NotificationEdit(title: editTitle, body: $0) }, editThread: editThread, createdAt: createdAt,
            startedAt: startedAt, finishedAt: finishedAt, updatedAt: updatedAt)
    }
}
