import Foundation
import NIOCore
import PostgresNIO
import RetractKit

/// Retraction by selector: every delivery of an app with one label, sent
/// within a time range, instead of a list of references (docs/ledger.md,
/// "Delivery labels").
extension RetractStore {
    /// A selector as the ledger reads it: its range, and the days of the
    /// partitions that can hold its deliveries (those before the retention
    /// window are gone).
    struct SelectedRange: Sendable {
        var column: String
        var value: String
        var after: Date
        var before: Date
        var firstDay: String
        var lastDay: String

        /// - Parameter selector: with ``RetractionSelector/sentBefore`` set, as a retraction keeps it.
        init(_ selector: RetractionSelector, oldestKept: Date) {
            column = selector.kind.column
            value = selector.value
            after = selector.sentAfter ?? .distantPast
            before = selector.sentBefore ?? .distantFuture
            firstDay = UTCDay(containing: max(after, oldestKept)).isoDate
            lastDay = UTCDay(containing: min(before, Date().addingTimeInterval(Retention.furthestAhead))).isoDate
        }
    }

    /// The selector's rows in token order after `after` and up to `through`, at most `limit`.
    private func selectedRows(
        appID: Int64, _ range: SelectedRange, after lower: ByteBuffer, through upper: ByteBuffer, limit: Int?
    ) async throws(StoreError) -> [DevicePage.Row] {
        let query: PostgresQuery = """
            SELECT d.reference, d.token, d.transport = 'fcm', d.sent_at,
                   (SELECT dt.recorded_at FROM dead_tokens dt WHERE dt.app_id = \(appID) AND dt.token = d.token), d.collapse_id
            FROM deliveries d
            WHERE d.app_id = \(appID) AND d.\(unescaped: range.column) = \(range.value)
              AND d.sent_on >= \(range.firstDay)::date AND d.sent_on <= \(range.lastDay)::date
              AND d.sent_at >= \(range.after) AND d.sent_at < \(range.before)
              AND d.token > \(lower) AND d.token <= \(upper)
            ORDER BY d.token
            LIMIT \(limit)
            """
        return try await perform("reading devices of \(range.column) \"\(range.value)\"", idempotent: true) { [self] in
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
    /// One read through the label's index, in token order, of at most four
    /// rows per device of the page: a device can have many deliveries (a
    /// conversation's messages), and the last one read may have more, so it
    /// is left to the next page. A device with more deliveries than a whole
    /// read is read alone, every row of it.
    package func devicePage(
        appID: Int64, selector: RetractionSelector, after: DeviceToken? = nil, through: DeviceToken? = nil, limit: Int = 1000
    ) async throws(StoreError) -> DevicePage {
        precondition(limit > 0, "a page holds at least one device")
        let range = SelectedRange(selector, oldestKept: retention.oldestKept())
        let lower = ByteBuffer(bytes: after?.bytes ?? [])
        let upper = ByteBuffer(bytes: through?.bytes ?? Self.pastEveryToken)
        let rowLimit = limit * 4
        let rows = try await selectedRows(appID: appID, range, after: lower, through: upper, limit: rowLimit)
        let filled = rows.count >= rowLimit
        if filled, let first = rows.first?.token, rows.last?.token == first {
            // No device lies between the cursor and this one, so up to it is every row of it.
            let all = try await selectedRows(appID: appID, range, after: lower, through: ByteBuffer(bytes: first.bytes), limit: nil)
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
        var knownDead = 0
        var mostReferences: Int?
    }

    static func census(
        of selector: RetractionSelector, appID: Int64, dryRun: Bool, oldestKept: Date, on connection: PostgresConnection, logger: Logger
    ) async throws -> Census {
        let range = SelectedRange(selector, oldestKept: oldestKept)
        var census = Census(devices: 0)
        let references = try await connection.query(
            """
            SELECT count(DISTINCT d.reference) FROM deliveries d
            WHERE d.app_id = \(appID) AND d.\(unescaped: range.column) = \(range.value)
              AND d.sent_on >= \(range.firstDay)::date AND d.sent_on <= \(range.lastDay)::date
              AND d.sent_at >= \(range.after) AND d.sent_at < \(range.before)
            """, logger: logger)
        for try await count in references.decode(Int.self) { census.references = count }
        let devices = try await connection.query(
            """
            SELECT count(*), count(*) FILTER (WHERE s.newest <= dt.recorded_at), coalesce(max(s.refs), 0)
            FROM (
                SELECT d.token, max(d.sent_at) AS newest, count(DISTINCT d.reference) AS refs FROM deliveries d
                WHERE d.app_id = \(appID) AND d.\(unescaped: range.column) = \(range.value)
                  AND d.sent_on >= \(range.firstDay)::date AND d.sent_on <= \(range.lastDay)::date
                  AND d.sent_at >= \(range.after) AND d.sent_at < \(range.before)
                GROUP BY d.token
            ) s
            LEFT JOIN dead_tokens dt ON dt.app_id = \(appID) AND dt.token = s.token
            """, logger: logger)
        for try await (count, dead, most) in devices.decode((Int, Int, Int).self) {
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

    /// How many devices of a page range a selector takes: live ones, and
    /// those skipped as known dead (see ``giveUp(_:of:reason:)``).
    func selectedDeviceCounts(
        appID: Int64, selector: RetractionSelector, after lower: ByteBuffer, through upper: ByteBuffer
    ) async throws(StoreError) -> (live: Int, dead: Int) {
        let range = SelectedRange(selector, oldestKept: retention.oldestKept())
        return try await perform("counting devices of \(range.column) \"\(range.value)\"", idempotent: true) { [self] in
            let rows = try await client.query(
                """
                SELECT count(*) FILTER (WHERE dt.recorded_at IS NULL OR d.newest > dt.recorded_at),
                       count(*) FILTER (WHERE d.newest <= dt.recorded_at)
                FROM (
                    SELECT token, max(sent_at) AS newest FROM deliveries
                    WHERE app_id = \(appID) AND \(unescaped: range.column) = \(range.value)
                      AND sent_on >= \(range.firstDay)::date AND sent_on <= \(range.lastDay)::date
                      AND sent_at >= \(range.after) AND sent_at < \(range.before)
                      AND token > \(lower) AND token <= \(upper)
                    GROUP BY token
                ) d
                LEFT JOIN dead_tokens dt ON dt.app_id = \(appID) AND dt.token = d.token
                """,
                logger: logger
            )
            for try await counts in rows.decode((Int, Int).self) { return counts }
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
    static func lockLabels(
        apps: [Int64], kinds: [String], values: [String], exclusive: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !apps.isEmpty else { return }
        let function = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
        try await connection.query(
            """
            SELECT \(unescaped: function)(\(Self.labelLockClass), (b.app * 256 + b.bucket)::int4)
            FROM (SELECT DISTINCT u.a AS app, hashtext(u.k || ':' || u.v) & 255 AS bucket
                  FROM unnest(\(apps)::bigint[], \(kinds)::text[], \(values)::text[]) AS u (a, k, v) ORDER BY 1, 2) b
            """,
            logger: logger)
    }

    /// The first key of the labels' advisory locks ("RSEL").
    static let labelLockClass: Int32 = 0x5253_454C

    /// The new deliveries a retraction by selector takes (same app, label
    /// and a send time within its range), each with the mode and badge of the
    /// latest such retraction, by index in `new`.
    static func selectedDeliveries(_ new: NewDeliveries, on connection: PostgresConnection, logger: Logger) async throws -> [Int: Mode] {
        guard !new.labels.isEmpty else { return [:] }
        var indices: [Int] = []
        var apps: [Int64] = []
        var kinds: [String] = []
        var values: [String] = []
        var sentAt: [Date] = []
        for (kind, column) in new.labels {
            for (index, value) in column.enumerated() where !value.isEmpty {
                indices.append(index)
                apps.append(new.appIDs[index])
                kinds.append(kind.rawValue)
                values.append(value)
                sentAt.append(new.sentAt[index])
            }
        }
        guard !indices.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT DISTINCT ON (u.i) u.i, r.app_id, r.mode, r.badge
            FROM unnest(\(indices)::bigint[], \(apps)::bigint[], \(kinds)::text[], \(values)::text[], \(sentAt)::timestamptz[])
                 AS u (i, a, k, v, s)
            JOIN retractions r ON r.app_id = u.a AND r.selector_kind = u.k AND r.selector_value = u.v AND NOT r.dry_run
                 AND u.s >= coalesce(r.sent_after, '-infinity') AND u.s < r.sent_before
            ORDER BY u.i, r.created_at DESC
            """,
            logger: logger)
        var selected: [Int: Mode] = [:]
        for try await (index, appID, mode, badge) in rows.decode((Int, Int64, String, Int?).self) {
            selected[index] = Mode(appID: appID, mode: mode, badge: badge)
        }
        return selected
    }
}
