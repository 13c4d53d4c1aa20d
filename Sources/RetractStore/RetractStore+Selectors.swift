import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

/// Retraction by selector: every delivery of an app with one label, sent
/// within a time range, instead of a list of references (docs/ledger.md,
/// "Delivery labels").
extension RetractStore {
    /// The rows `taken` takes in token order after `lower` and up to `upper`, at most `limit`.
    private func takenRows(
        _ taken: TakenDeliveries, after lower: ByteBuffer, through upper: ByteBuffer, limit: Int?
    ) async throws(StoreError) -> [DevicePage.Row] {
        var binds = PostgresBindings()
        let sql = """
            SELECT d.reference, d.token, d.transport = 'fcm', d.sent_at,
                   (SELECT dt.recorded_at FROM dead_tokens dt WHERE dt.app_id = d.app_id AND dt.token = d.token), d.collapse_id
            FROM deliveries d
            WHERE \(taken.condition("d", binds: &binds))
              AND d.token > \(binds.placeholder(lower)) AND d.token <= \(binds.placeholder(upper))
            ORDER BY d.token
            LIMIT \(binds.placeholder(limit.map(Int64.init) ?? Int64.max))
            """
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        return try await perform("reading devices of \(taken.description)", idempotent: true) { [self] in
            var rows: [DevicePage.Row] = []
            for try await (reference, token, isFCM, sentAt, deadSince, collapseID) in try await client.query(query, logger: logger).decode(
                (String, ByteBuffer, Bool, Date, Date?, String?).self)
            {
                rows.append((reference, DeviceToken(token), isFCM ? .fcm : .apns, sentAt, deadSince, collapseID))
            }
            return rows
        }
    }

    /// One page of the devices with a delivery the selector takes, in token
    /// order after `after` and up to `through` (inclusive), each device once
    /// with every reference of those deliveries; known-dead devices as
    /// ``devicePage(appID:references:after:through:limit:)`` counts them.
    ///
    /// One read through the label's index, in token order, of `limit + 1`
    /// rows: as many as a page of references reads for a campaign's one
    /// delivery per device. A device can have many deliveries (a
    /// conversation's messages), and the last one read may have more, so it
    /// is left to the next page: a page of such devices holds fewer. A device
    /// with more deliveries than a whole read is read alone, every row of it.
    package func devicePage(
        appID: Int64, selector: RetractionSelector, after: DeviceToken? = nil, through: DeviceToken? = nil, limit: Int = 1000
    ) async throws(StoreError) -> DevicePage {
        precondition(limit > 0, "a page holds at least one device")
        let taken = TakenDeliveries(target: .selector(selector), appID: appID, oldestKept: retention.oldestKept())
        let lower = ByteBuffer(bytes: after?.bytes ?? [])
        let upper = ByteBuffer(bytes: through?.bytes ?? Self.pastEveryToken)
        let rowLimit = limit + 1
        let rows = try await takenRows(taken, after: lower, through: upper, limit: rowLimit)
        let filled = rows.count >= rowLimit
        if filled, let first = rows.first?.token, rows.last?.token == first {
            // No device lies between the cursor and this one, so up to it is every row of it.
            let all = try await takenRows(taken, after: lower, through: ByteBuffer(bytes: first.bytes), limit: nil)
            return DevicePage(selecting: all, limit: limit, mayHaveMore: true, lastMayContinue: false)
        }
        return DevicePage(selecting: rows, limit: limit, mayHaveMore: filled, lastMayContinue: filled)
    }

    /// 0xFF repeated one byte longer than the longest token: sorts after every token the ledger accepts.
    static let pastEveryToken = [UInt8](repeating: 0xFF, count: Delivery.maximumTokenLength + 1)

    /// What a retraction takes when it is made: devices (the known dead
    /// included); for a dry run, the known-dead devices it would skip; for a
    /// selector, the references it matched; and, for either of those, the
    /// most references one device would be sent.
    struct Census: Sendable {
        var devices: Int
        var references: Int?
        /// For a selector, the references it matched, which later retractions carry.
        var takenReferences: [String]?
        var knownDead = 0
        var mostReferences: Int?
        /// The first and last day the references were delivered on, for a
        /// retraction that found deliveries.
        var deliveredFrom: UTCDay?
        var deliveredThrough: UTCDay?
    }

    static func census(
        of selector: RetractionSelector, appID: Int64, dryRun: Bool, oldestKept: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Census {
        let taken = TakenDeliveries(target: .selector(selector), appID: appID, oldestKept: oldestKept)
        var census = Census(devices: 0)
        var binds = PostgresBindings()
        let references = """
            SELECT coalesce(array_agg(DISTINCT d.reference), '{}'), min(d.sent_on), max(d.sent_on) FROM deliveries d
            WHERE \(taken.condition("d", binds: &binds))
            """
        for try await (matched, from, through) in try await connection.query(
            PostgresQuery(unsafeSQL: references, binds: binds), logger: logger
        ).decode(([String], UTCDay?, UTCDay?).self) {
            census.references = matched.count
            census.takenReferences = matched
            census.deliveredFrom = from
            census.deliveredThrough = through
        }
        binds = PostgresBindings()
        let devices = """
            SELECT count(*), count(*) FILTER (WHERE s.newest <= dt.recorded_at), coalesce(max(s.refs), 0)
            FROM (
                SELECT d.token, max(d.sent_at) AS newest, count(DISTINCT d.reference) AS refs FROM deliveries d
                WHERE \(taken.condition("d", binds: &binds))
                GROUP BY d.token
            ) s
            LEFT JOIN dead_tokens dt ON dt.app_id = \(binds.placeholder(appID)) AND dt.token = s.token
            """
        let rows = try await connection.query(PostgresQuery(unsafeSQL: devices, binds: binds), logger: logger)
        for try await (count, dead, most) in rows.decode((Int, Int, Int).self) {
            census.devices = count
            // Only a dry run reports the known dead; a retraction counts those it skips as it goes.
            census.knownDead = dryRun ? dead : 0
            census.mostReferences = most
        }
        return census
    }

    /// The most references one device of `references` would be sent: what a dry run reports.
    static func mostReferences(of references: [String], appID: Int64, on connection: PostgresConnection, logger: Logger) async throws -> Int
    {
        let rows = try await connection.query(
            """
            SELECT coalesce(max(n), 0) FROM (
                SELECT count(DISTINCT reference) AS n FROM deliveries WHERE app_id = \(appID) AND reference = ANY(\(references)::text[])
                GROUP BY token
            ) s
            """, logger: logger)
        for try await most in rows.decode(Int.self) { return most }
        return 0
    }

    /// How many devices of a page range a retraction takes: live ones, and
    /// those skipped as known dead (see ``giveUp(_:of:reason:)``).
    func deviceCounts(
        of retraction: Retraction, after lower: ByteBuffer, through upper: ByteBuffer
    ) async throws(StoreError) -> (live: Int, dead: Int) {
        let taken = TakenDeliveries(target: retraction.target, appID: retraction.appID, oldestKept: retention.oldestKept())
        var binds = PostgresBindings()
        let sql = """
            SELECT count(*) FILTER (WHERE dt.recorded_at IS NULL OR d.newest > dt.recorded_at),
                   count(*) FILTER (WHERE d.newest <= dt.recorded_at)
            FROM (
                SELECT d.token, max(d.sent_at) AS newest FROM deliveries d
                WHERE \(taken.condition("d", binds: &binds))
                  AND d.token > \(binds.placeholder(lower)) AND d.token <= \(binds.placeholder(upper))
                GROUP BY d.token
            ) d
            LEFT JOIN dead_tokens dt ON dt.app_id = \(binds.placeholder(retraction.appID)) AND dt.token = d.token
            """
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        return try await perform("counting the devices of \(taken.description)", idempotent: true) { [self] in
            for try await counts in try await client.query(query, logger: logger).decode((Int, Int).self) { return counts }
            return (0, 0)
        }
    }

    // MARK: - Locks and late deliveries

    /// Takes, until the transaction ends, the locks of the labels' buckets
    /// (64 per app and kind, by a hash of the value; in one order): shared to
    /// record deliveries with labels, exclusive to make a retraction by
    /// selector. As for references
    /// (``lockReferences(apps:references:exclusive:on:logger:)``), a
    /// delivery is then either committed before the retraction is made, and
    /// its pages find it, or recorded after, and retracted at once as late.
    static func lockLabels(_ labels: [Label], exclusive: Bool, on connection: PostgresConnection, logger: Logger) async throws {
        guard !labels.isEmpty else { return }
        let function = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
        try await connection.query(
            """
            SELECT \(unescaped: function)(\(Self.labelLockClass), (b.app * 256 + b.bucket)::int4)
            FROM (SELECT DISTINCT u.a AS app, hashtext(u.k || ':' || u.v) & 255 AS bucket
                  FROM unnest(\(labels.map(\.appID))::bigint[], \(labels.map(\.kind.rawValue))::text[], \(labels.map(\.value))::text[])
                       AS u (a, k, v)
                  ORDER BY 1, 2) b
            """,
            logger: logger)
    }

    /// The first key of the labels' advisory locks ("RSEL").
    static let labelLockClass: Int32 = 0x5253_454C

    /// The new deliveries a retraction by selector takes (same app, label
    /// and a send time within its range), each with the mode and badge of the
    /// latest such retraction, by index in `new`.
    ///
    /// One look through `retractions_by_selector` for the batch's distinct
    /// labels; nearly always it finds none. What it finds is matched to the
    /// deliveries here.
    static func selectedDeliveries(_ new: NewDeliveries, on connection: PostgresConnection, logger: Logger) async throws -> [Int: Mode] {
        let labels = new.distinctLabels
        guard !labels.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT r.app_id, r.selector_kind, r.selector_value, r.sent_after, r.sent_before, r.mode, r.badge, r.id, r.created_at
            FROM unnest(\(labels.map(\.appID))::bigint[], \(labels.map(\.kind.rawValue))::text[], \(labels.map(\.value))::text[])
                 AS u (a, k, v)
            JOIN retractions r ON r.app_id = u.a AND r.selector_kind = u.k AND r.selector_value = u.v AND \(unescaped: Self.takesDeliveries)
            """,
            logger: logger)
        // Each label's retractions, newest first.
        var retractions: [Label: [(after: Date?, before: Date, mode: Mode, createdAt: Date)]] = [:]
        for try await (appID, kind, value, after, before, mode, badge, source, createdAt) in rows.decode(
            (Int64, String, String, Date?, Date, String, Int?, UUID, Date).self)
        {
            guard let kind = RetractionSelector.Kind(rawValue: kind) else { continue }
            retractions[Label(appID: appID, kind: kind, value: value), default: []].append(
                (after, before, Mode(appID: appID, mode: mode, badge: badge, source: source), createdAt))
        }
        guard !retractions.isEmpty else { return [:] }
        var selected: [Int: (mode: Mode, createdAt: Date)] = [:]
        for (kind, values) in new.labels {
            for (index, value) in values.enumerated() where !value.isEmpty {
                let sentAt = new.sentAt[index]
                for retraction in retractions[Label(appID: new.appIDs[index], kind: kind, value: value)] ?? []
                where retraction.after.map({ sentAt >= $0 }) ?? true && sentAt < retraction.before {
                    if let chosen = selected[index], chosen.createdAt >= retraction.createdAt { continue }
                    selected[index] = (retraction.mode, retraction.createdAt)
                }
            }
        }
        return selected.mapValues(\.mode)
    }
}
