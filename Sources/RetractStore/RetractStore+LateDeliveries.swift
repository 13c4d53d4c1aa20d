import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

/// Deliveries recorded after their reference was retracted: a message deleted
/// while its own fan-out was still running must go from those devices too.
extension RetractStore {
    /// Who a retraction of late deliveries is requested by, in the account and the audit log.
    package static let lateDeliveryActor = "retract:late-delivery"

    /// New deliveries, column by column, as the insert wrote them.
    struct NewDeliveries: Sendable {
        var appIDs: [Int64] = []
        var references: [String] = []
        var tokens: [ByteBuffer] = []
        var sentAt: [Date] = []
        var transports: [String] = []
        /// "" for none.
        var collapseIDs: [String] = []
        /// Each label some delivery has, "" for those without it.
        var labels: [RetractionSelector.Kind: [String]] = [:]

        /// - Parameter labels: the value of each ``RetractionSelector/Kind``, in order, "" for none.
        mutating func append(
            appID: Int64, reference: String, token: ByteBuffer, sentAt: Date, transport: String, collapseID: String, labels: [String]
        ) {
            let index = references.count
            appIDs.append(appID)
            references.append(reference)
            tokens.append(token)
            self.sentAt.append(sentAt)
            transports.append(transport)
            collapseIDs.append(collapseID)
            // A kind first met here starts with "" for the deliveries before.
            for (kind, value) in zip(RetractionSelector.Kind.allCases, labels) where !value.isEmpty || self.labels[kind] != nil {
                self.labels[kind, default: Array(repeating: "", count: index)].append(value)
            }
        }

        /// The labels given, each once with its app: what recording locks,
        /// and looks up retractions by selector of. A batch has few (a
        /// campaign one, a chat's batch a few conversations).
        var distinctLabels: [Label] {
            var seen = Set<Label>()
            for (kind, values) in labels {
                for (index, value) in values.enumerated() where !value.isEmpty {
                    seen.insert(Label(appID: appIDs[index], kind: kind, value: value))
                }
            }
            return seen.sorted { ($0.appID, $0.kind.rawValue, $0.value) < ($1.appID, $1.kind.rawValue, $1.value) }
        }
    }

    /// One label of an app.
    struct Label: Hashable, Sendable {
        var appID: Int64
        var kind: RetractionSelector.Kind
        var value: String
    }

    /// Retracts `deliveries`, recorded before their original was sent, when
    /// their reference was retracted while the original was on its way: the
    /// retraction may have pushed the removal before APNs had the original,
    /// and a phone shows an original that arrives after its removal. Called
    /// once the originals were accepted, it makes a late retraction of them
    /// (as ``retractLate(_:on:logger:)`` does at recording), so the removal
    /// comes after. Nearly always nothing was retracted: one look through the
    /// index of retractions by reference.
    ///
    /// - Returns: the retractions made.
    package func retractSentWhileRetracted(_ deliveries: [Delivery]) async throws(StoreError) -> [UUID] {
        guard !deliveries.isEmpty else { return [] }
        var collected = NewDeliveries()
        for delivery in deliveries {
            let labels = delivery.labels
            collected.append(
                appID: delivery.appID, reference: delivery.reference.rawValue, token: ByteBuffer(bytes: delivery.token.bytes),
                sentAt: delivery.sentAt, transport: delivery.transport.rawValue, collapseID: delivery.collapseID ?? "",
                labels: [labels.thread ?? "", labels.sender ?? "", labels.recipient ?? "", labels.campaign ?? ""])
        }
        let (new, logger) = (collected, logger)
        return try await perform("checking whether \(deliveries.count) originals were retracted while being sent", idempotent: false) {
            [self] in
            try await client.withTransaction(logger: logger) { connection in
                try await Self.lockReferences(
                    apps: new.appIDs, references: new.references, exclusive: false, on: connection, logger: logger)
                return try await Self.retractLate(new, on: connection, logger: logger)
            }
        }
    }

    /// Retracts, in the same transaction as their insert, the new deliveries
    /// whose reference the app has already retracted, or that a retraction by
    /// selector takes (same label, sent within its range): for each app, mode
    /// and badge, one retraction of those devices' references only, sent in
    /// the mode of the latest retraction of each reference (else of the
    /// latest selector). A new delivery of a reference that was edited, and
    /// not retracted, is sent the newest edit of it instead, in an edit of
    /// its own (one per reference: an edit is of one).
    ///
    /// Nearly every batch has no retracted reference: that is one look through
    /// the index of retractions by reference, and for a batch with labels one
    /// through the index of retractions by selector.
    ///
    /// - Returns: the retractions made.
    /// - Parameter editing: whether a late edit is made too; not for
    ///   deliveries recorded before their original is sent.
    static func retractLate(
        _ new: NewDeliveries, editing: Bool = true, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID] {
        guard !new.references.isEmpty else { return [] }
        let retracted = try await retractedReferences(apps: new.appIDs, references: new.references, on: connection, logger: logger)
        let selected = try await selectedDeliveries(new, on: connection, logger: logger)
        let edited =
            editing ? try await editedReferences(apps: new.appIDs, references: new.references, on: connection, logger: logger) : [:]
        guard !retracted.isEmpty || !selected.isEmpty || !edited.isEmpty else { return [] }
        if !retracted.isEmpty || !selected.isEmpty { try await addToFeedOfEarlierRetractions(new, on: connection, logger: logger) }

        // Each late delivery's mode: that of the latest retraction of its reference, else of the latest selector taking it,
        // else (the message is still to be shown) that of the newest edit of its reference.
        var modes: [Int: Mode] = selected
        for index in new.references.indices {
            let key = Key(appID: new.appIDs[index], reference: new.references[index])
            if let mode = retracted[key] {
                modes[index] = mode
            } else if modes[index] == nil, let mode = edited[key] {
                modes[index] = mode
            }
        }
        modes = try await withTexts(modes, on: connection, logger: logger)
        // A retraction names at most 1000 references: each mode's late references go in chunks of that many.
        var referencesByMode: [Mode: Set<String>] = [:]
        for (index, mode) in modes { referencesByMode[mode, default: []].insert(new.references[index]) }
        var chunkOf: [Mode: [String: Int]] = [:]
        for (mode, references) in referencesByMode {
            for (position, reference) in references.sorted().enumerated() {
                chunkOf[mode, default: [:]][reference] = position / RetractionRequest.maximumReferences
            }
        }
        // Each group's devices, each with its late references, in the order recorded.
        var groups: [Group: [ByteBuffer: LateDevice]] = [:]
        // The first and last time each group's deliveries were sent: the days its retraction records,
        // made into days by PostgreSQL as the deliveries' sent_on were.
        var sent: [Group: ClosedRange<Date>] = [:]
        for index in new.references.indices {
            guard let mode = modes[index], let chunk = chunkOf[mode]?[new.references[index]] else { continue }
            let group = Group(mode: mode, chunk: chunk)
            groups[group, default: [:]][new.tokens[index], default: LateDevice(transport: new.transports[index])]
                .add(new.references[index], collapseID: new.collapseIDs[index])
            let at = new.sentAt[index]
            sent[group] = sent[group].map { min($0.lowerBound, at)...max($0.upperBound, at) } ?? at...at
        }
        var made: [UUID] = []
        for (group, devices) in groups {
            let mode = group.mode
            let id = UUID()
            let references = Array(Set(devices.values.flatMap(\.references))).sorted()
            let tokens = Array(devices.keys)
            let deviceRefs = try tokens.map { String(decoding: try JSONEncoder().encode(devices[$0]!.references), as: UTF8.self) }
            let collapseIDs = try tokens.map { String(decoding: try JSONEncoder().encode(devices[$0]!.collapseIDs), as: UTF8.self) }
            let transports = tokens.map { devices[$0]!.transport }
            let reason = mode.edit == nil ? "recorded after its retraction" : "recorded after its edit"
            let action = mode.edit == nil ? "retraction.created" : "edit.created"
            let days = sent[group]!
            try await connection.query(
                """
                WITH made AS (
                    INSERT INTO retractions (id, app_id, refs, requested_by, reason, state, total, retrying, mode, badge, text,
                                             delivered_from, delivered_through, edit_title, edit_body, edit_thread)
                    VALUES (\(id), \(mode.appID), \(references), \(Self.lateDeliveryActor), \(reason), 'queued', \(tokens.count),
                            \(tokens.count), \(mode.mode), \(mode.badge), \(mode.text), (\(days.lowerBound) AT TIME ZONE 'UTC')::date,
                            (\(days.upperBound) AT TIME ZONE 'UTC')::date, \(mode.edit?.title), \(mode.edit?.body), \(mode.editThread))
                    RETURNING id
                ),
                queued AS (
                    INSERT INTO work_items (retraction_id, kind, token, refs, transport, collapse_ids)
                    SELECT (SELECT id FROM made), 'push', t, ARRAY(SELECT jsonb_array_elements_text(f::jsonb)), x::push_transport,
                           ARRAY(SELECT jsonb_array_elements_text(c::jsonb))
                    FROM unnest(\(tokens)::bytea[], \(deviceRefs)::text[], \(transports)::text[], \(collapseIDs)::text[]) AS u (t, f, x, c)
                )
                INSERT INTO audit_log (actor, action, app_id, subject, details)
                SELECT \(Self.lateDeliveryActor), \(action), \(mode.appID), \(id.uuidString.lowercased()),
                       jsonb_strip_nulls(jsonb_build_object('references', \(references.joined(separator: ","))::text, 'devices', \(String(tokens.count))::text,
                                          'dryRun', 'false', 'reason', \(reason)::text, 'mode', \(mode.mode)::text,
                                          'badge', \(mode.badge.map(String.init))::text))
                FROM made
                """,
                logger: logger)
            made.append(id)
        }
        return made
    }

    /// Puts `new` deliveries in the device feed of each earlier retraction
    /// that takes them, as if they had been recorded before it (migration
    /// 0017): the feed lists a retraction with every delivery of its
    /// references, or of its label and range, whenever recorded. The late
    /// retraction made next lists them too, after the device's cursor.
    private static func addToFeedOfEarlierRetractions(
        _ new: NewDeliveries, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let none = Array(repeating: "", count: new.references.count)
        let labels = RetractionSelector.Kind.allCases.map { new.labels[$0] ?? none }
        try await connection.query(
            """
            WITH new AS (
                SELECT * FROM unnest(\(new.appIDs)::bigint[], \(new.references)::text[], \(new.tokens)::bytea[], \(new.sentAt)::timestamptz[],
                                     \(labels[0])::text[], \(labels[1])::text[], \(labels[2])::text[], \(labels[3])::text[])
                    AS n (app_id, reference, token, sent_at, thread, sender, recipient, campaign)
            ),
            taken AS (
                SELECT n.app_id, n.token, r.created_xid, r.id, n.reference, n.sent_at, r.created_at
                FROM new n JOIN retractions r ON r.app_id = n.app_id AND r.refs @> ARRAY[n.reference] AND \(unescaped: Self.takesDeliveries)
                UNION ALL
                SELECT n.app_id, n.token, r.created_xid, r.id, n.reference, n.sent_at, r.created_at
                FROM new n
                CROSS JOIN LATERAL (VALUES ('thread', n.thread), ('sender', n.sender), ('recipient', n.recipient), ('campaign', n.campaign))
                     AS l (kind, value)
                JOIN retractions r ON r.app_id = n.app_id AND r.selector_kind = l.kind AND r.selector_value = l.value AND \(unescaped: Self.takesDeliveries)
                 AND n.sent_at >= coalesce(r.sent_after, '-infinity') AND n.sent_at < r.sent_before
                WHERE l.value <> ''
            )
            INSERT INTO device_feed (app_id, token, retraction_xid, retraction_id, reference, sent_on, retracted_at)
            SELECT app_id, token, created_xid, id, reference, (sent_at AT TIME ZONE 'UTC')::date, created_at FROM taken
            ON CONFLICT DO NOTHING
            """,
            logger: logger)
    }

    /// The references among `references` each app has retracted (dry runs
    /// aside), with the mode and badge of the latest retraction of each.
    static func retractedReferences(
        apps: [Int64], references: [String], on connection: PostgresConnection, logger: Logger
    ) async throws -> [Key: Mode] {
        let refs = Array(Set(references))
        var retracted: [Key: Mode] = [:]
        let rows = try await connection.query(
            """
            SELECT DISTINCT ON (r.app_id, ref) r.app_id, ref, r.mode, r.badge, r.id
            FROM retractions r, unnest(r.refs) AS ref
            WHERE r.app_id = ANY(\(Array(Set(apps)))::bigint[]) AND \(unescaped: Self.takesDeliveries) AND r.refs && \(refs)::text[]
              AND ref = ANY(\(refs)::text[])
            ORDER BY r.app_id, ref, r.created_at DESC
            """,
            logger: logger)
        for try await (appID, reference, mode, badge, source) in rows.decode((Int64, String, String, Int?, UUID).self) {
            retracted[Key(appID: appID, reference: reference)] = Mode(appID: appID, mode: mode, badge: badge, source: source)
        }
        return retracted
    }

    /// The references among `references` each app edited and did not
    /// retract: the mode and text of the newest edit of each (dry runs and
    /// edits cancelled, awaiting approval, rejected or expired aside). The
    /// caller prefers a retraction of the same reference.
    static func editedReferences(
        apps: [Int64], references: [String], on connection: PostgresConnection, logger: Logger
    ) async throws -> [Key: Mode] {
        let refs = Array(Set(references))
        var edited: [Key: Mode] = [:]
        let rows = try await connection.query(
            """
            SELECT DISTINCT ON (r.app_id, r.refs[1]) r.app_id, r.refs[1], r.mode, r.edit_title, r.edit_body, r.edit_thread
            FROM retractions r
            WHERE r.app_id = ANY(\(Array(Set(apps)))::bigint[]) AND r.refs && \(refs)::text[] AND r.edit_body IS NOT NULL
              AND NOT r.dry_run AND r.state NOT IN ('cancelling', 'cancelled', 'awaiting-approval', 'rejected', 'expired')
            ORDER BY r.app_id, r.refs[1], r.created_at DESC
            """,
            logger: logger)
        for try await (appID, reference, mode, title, body, thread) in rows.decode((Int64, String, String, String?, String, String?).self) {
            edited[Key(appID: appID, reference: reference)] = Mode(
                appID: appID, mode: mode, badge: nil, edit: NotificationEdit(title: title, body: body), editThread: thread,
                editReference: reference)
        }
        return edited
    }

    /// Takes, until the transaction ends, the locks of the references'
    /// buckets (64 per app, by a hash of the reference; in one order, so two
    /// transactions cannot deadlock): shared to record deliveries, exclusive
    /// to make a retraction. A delivery is then either committed before a
    /// retraction of its reference is made (and the retraction's pages find
    /// it) or recorded after it (and retracted at once as late): never
    /// between the two, missed by both.
    static func lockReferences(
        apps: [Int64], references: [String], exclusive: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let function = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
        try await connection.query(
            """
            SELECT \(unescaped: function)(\(Self.referenceLockClass), (b.app * 64 + b.bucket)::int4)
            FROM (SELECT DISTINCT u.a AS app, hashtext(u.r) & 63 AS bucket
                  FROM unnest(\(apps)::bigint[], \(references)::text[]) AS u (a, r) ORDER BY 1, 2) b
            """,
            logger: logger)
    }

    /// The first key of the references' advisory locks ("RETR").
    static let referenceLockClass: Int32 = 0x5245_5452

    struct Key: Hashable {
        var appID: Int64
        var reference: String
    }

    /// The late deliveries that go in one retraction.
    private struct Group: Hashable {
        var mode: Mode
        var chunk: Int
    }

    /// How a late retraction reaches phones: as the retraction it follows.
    struct Mode: Hashable {
        var appID: Int64
        var mode: String
        var badge: Int?
        /// Its alert text (migration 0019), read from ``source`` once late deliveries are found.
        var text: String? = nil
        /// The retraction it follows, until its text is read.
        var source: UUID? = nil
        /// For the edit it follows: the new text, its thread, and its one
        /// reference, which keeps each reference's late edit apart.
        var edit: NotificationEdit? = nil
        var editThread: String? = nil
        var editReference: String? = nil
    }

    /// Each mode with the text of the retraction it follows, read in one
    /// query, and no longer naming that retraction: late deliveries of
    /// retractions alike go in one late retraction.
    private static func withTexts(_ modes: [Int: Mode], on connection: PostgresConnection, logger: Logger) async throws -> [Int: Mode] {
        let sources = Array(Set(modes.values.compactMap(\.source)))
        var texts: [UUID: String] = [:]
        let rows = try await connection.query(
            "SELECT id, text FROM retractions WHERE id = ANY(\(sources)::uuid[]) AND text IS NOT NULL", logger: logger)
        for try await (id, text) in rows.decode((UUID, String).self) { texts[id] = text }
        return modes.mapValues { mode in
            var mode = mode
            mode.text = mode.source.flatMap { texts[$0] }
            mode.source = nil
            return mode
        }
    }

    /// One device of a late retraction.
    private struct LateDevice {
        var transport: String
        var references: [String] = []
        var collapseIDs: [String] = []

        mutating func add(_ reference: String, collapseID: String) {
            guard !references.contains(reference) else { return }
            references.append(reference)
            collapseIDs.append(collapseID)
        }
    }
}
