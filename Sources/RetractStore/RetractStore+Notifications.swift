import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// A page of the notifications the ledger holds, most recently sent
    /// first (then by reference and app), each with the retractions that
    /// take it.
    ///
    /// Reads `notifications`, which a trigger keeps as deliveries are
    /// recorded, through an index in the page's order, one app at a time:
    /// a page reads as many rows as it shows (per app of the query), however
    /// many deliveries the ledger holds, and its `LIMIT` bounds the work.
    /// Only the page's own notifications are then counted, each over all of
    /// its deliveries through the primary key. On ``readClient``.
    package func notificationPage(_ query: NotificationQuery) async throws(StoreError) -> NotificationPage {
        if let (field, problem) = query.problem { throw StoreError(.invalidInput, "\(field): \(problem)") }
        let sql = Self.notificationPageQuery(query)
        return try await performRead("listing notifications") { [self] in
            var found: [(NotificationSummary, NotificationCursor)] = []
            let rows = try await readClient.query(sql, logger: logger)
            for try await row in rows {
                var columns = ColumnReader(row)
                let (appID, appName, reference, micros, devices, dead) = try columns.next((Int64, String, String, Int64, Int, Int).self)
                let (first, last, thread, campaign) = try columns.next((Date, Date, String?, String?).self)
                found.append(
                    (
                        NotificationSummary(
                            appID: appID, appName: appName, reference: reference, devices: devices, deadDevices: dead, firstSentAt: first,
                            lastSentAt: last, thread: thread, campaign: campaign, retractions: []),
                        NotificationCursor(microseconds: micros, reference: reference, appID: appID)
                    ))
            }
            var notifications = found.prefix(query.limit).map(\.0)
            let briefs = try await Self.retractionBriefs(
                of: notifications.map { ($0.appID, $0.reference) }, client: readClient, logger: logger)
            for index in notifications.indices {
                notifications[index].retractions = briefs[Pair(notifications[index].appID, notifications[index].reference)] ?? []
            }
            return NotificationPage(notifications: notifications, next: found.count > query.limit ? found[query.limit - 1].1 : nil)
        }
    }

    /// The statement of a page of ``notificationPage(_:)``: the query's
    /// notifications and their counts, one row more than the page holds
    /// when there is a next page. Apart so that a test can `EXPLAIN` it.
    package static func notificationPageQuery(_ query: NotificationQuery) -> PostgresQuery {
        var binds = PostgresBindings()
        func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        var conditions = ["n.app_id = x.app_id"]
        if let after = query.sentAfter { conditions.append("n.last_sent_at >= \(bind(after))::timestamptz") }
        if let before = query.sentBefore { conditions.append("n.last_sent_at < \(bind(before))::timestamptz") }
        if let thread = query.thread { conditions.append("n.thread = \(bind(thread))::text") }
        if let campaign = query.campaign { conditions.append("n.campaign = \(bind(campaign))::text") }
        if let reference = query.reference { conditions.append("n.reference = \(bind(reference))::text") }
        if let cursor = query.cursor {
            let at = "('epoch'::timestamptz + \(bind(cursor.microseconds))::bigint * interval '1 microsecond')"
            let reference = bind(cursor.reference)
            // The bound alone is what the index can start from; the rest picks up after the cursor's own row.
            conditions.append(
                "n.last_sent_at <= \(at) AND (n.last_sent_at < \(at) OR n.reference > \(reference)::text "
                    + "OR (n.reference = \(reference)::text AND n.app_id > \(bind(cursor.appID))::bigint))")
        }
        let apps = query.appIDs.map { "unnest(\(bind($0.sorted()))::bigint[])" } ?? "(SELECT id FROM apps)"
        let limit = bind(query.limit + 1)
        return PostgresQuery(
            unsafeSQL: """
                WITH page AS MATERIALIZED (
                    SELECT n.*
                    FROM \(apps) AS x (app_id)
                    CROSS JOIN LATERAL (
                        SELECT n.app_id, n.reference, n.first_sent_at, n.last_sent_at, n.thread, n.campaign
                        FROM notifications n
                        WHERE \(conditions.joined(separator: " AND "))
                        ORDER BY n.last_sent_at DESC, n.reference
                        LIMIT \(limit)
                    ) n
                    ORDER BY n.last_sent_at DESC, n.reference, n.app_id
                    LIMIT \(limit)
                )
                SELECT p.app_id, a.name, p.reference, (extract(epoch FROM p.last_sent_at) * 1000000)::bigint,
                       s.devices, s.dead, p.first_sent_at, p.last_sent_at, p.thread, p.campaign
                FROM page p
                JOIN apps a ON a.id = p.app_id
                CROSS JOIN LATERAL (
                    SELECT count(*) AS devices, count(dt.token) AS dead
                    FROM (
                        -- Only the partitions of the days it was sent on are read (pruned as the statement runs).
                        SELECT DISTINCT d.token FROM deliveries d
                        WHERE d.app_id = p.app_id AND d.reference = p.reference
                          AND d.sent_on BETWEEN (p.first_sent_at AT TIME ZONE 'UTC')::date AND (p.last_sent_at AT TIME ZONE 'UTC')::date
                    ) t
                    LEFT JOIN dead_tokens dt ON dt.app_id = p.app_id AND dt.token = t.token
                ) s
                ORDER BY p.last_sent_at DESC, p.reference, p.app_id
                """,
            binds: binds)
    }

    /// One notification over all of its deliveries, and its first
    /// `deviceLimit` devices in token order; nil when the app has no
    /// delivery of `reference`.
    package func notificationDetail(appID: Int64, reference: String, deviceLimit: Int) async throws(StoreError) -> NotificationDetail? {
        guard deviceLimit >= 0 else { throw StoreError(.invalidInput, "deviceLimit: \(deviceLimit); 0 or more") }
        let page = try await notificationPage(NotificationQuery(appIDs: [appID], reference: reference, limit: 1))
        guard let summary = page.notifications.first else { return nil }
        guard deviceLimit > 0 else { return NotificationDetail(summary: summary, devices: []) }
        let devices = try await performRead("reading the devices of \(reference)") { [self] in
            let rows = try await readClient.query(
                """
                SELECT d.token, min(d.transport)::text, max(d.sent_at), dt.dead_since, dt.reason, dt.recorded_at
                FROM deliveries d
                LEFT JOIN dead_tokens dt ON dt.app_id = d.app_id AND dt.token = d.token
                WHERE d.app_id = \(appID) AND d.reference = \(reference)
                GROUP BY d.token, dt.dead_since, dt.reason, dt.recorded_at
                ORDER BY d.token
                LIMIT \(deviceLimit)
                """,
                logger: logger)
            var devices: [NotificationDetail.Device] = []
            for try await (bytes, transport, sentAt, since, reason, learnedAt) in rows.decode(
                (ByteBuffer, String, Date, Date?, String?, Date?).self)
            {
                let token = DeviceToken(bytes: Array(bytes.readableBytesView))
                let dead = since.map { DeadToken(token: token, since: $0, reason: reason ?? "", learnedAt: learnedAt ?? $0) }
                devices.append(
                    NotificationDetail.Device(
                        token: token, transport: PushService(rawValue: transport) ?? .apns, sentAt: sentAt, dead: dead))
            }
            return devices
        }
        return NotificationDetail(summary: summary, devices: devices)
    }

    /// An app and a reference, as a dictionary key.
    private struct Pair: Hashable {
        var appID: Int64
        var reference: String
        init(_ appID: Int64, _ reference: String) {
            self.appID = appID
            self.reference = reference
        }
    }

    /// The retractions that take each notification, oldest first: those
    /// naming its reference (one read of `retractions_by_reference` for the
    /// page's references, by overlap: with a join on `@>` per reference the
    /// planner read all 200,000 retractions of a test ledger, 1.4 s), and
    /// those by a selector one of its deliveries falls under, found from the
    /// labels of its deliveries through `retractions_by_selector` (which
    /// holds no dry runs), as the device feed finds them. The check that a
    /// delivery falls in the selector's range is a `LATERAL ... LIMIT 1`:
    /// as `EXISTS`, PostgreSQL hashed every delivery of the ledger.
    private static func retractionBriefs(
        of notifications: [(appID: Int64, reference: String)], client: PostgresClient, logger: Logger
    ) async throws -> [Pair: [RetractionBrief]] {
        guard !notifications.isEmpty else { return [:] }
        let apps = notifications.map(\.appID)
        let references = notifications.map(\.reference)
        let columns =
            "r.id, r.state, r.mode, r.dry_run, r.created_at, r.requested_by, r.reason, r.selector_kind, r.selector_value, r.sent_after, r.sent_before, r.edit_body IS NOT NULL"
        let rows = try await client.query(
            """
            SELECT x.app_id, x.reference, \(unescaped: columns)
            FROM retractions r
            JOIN unnest(\(apps)::bigint[], \(references)::text[]) AS x (app_id, reference)
                ON r.app_id = x.app_id AND x.reference = ANY(r.refs)
            WHERE r.refs && \(references)::text[]
            UNION ALL
            SELECT x.app_id, x.reference, \(unescaped: columns)
            FROM unnest(\(apps)::bigint[], \(references)::text[]) AS x (app_id, reference)
            CROSS JOIN LATERAL (
                SELECT DISTINCT p.kind, p.value
                FROM deliveries d
                CROSS JOIN LATERAL (VALUES ('thread', d.thread), ('sender', d.sender), ('recipient', d.recipient), ('campaign', d.campaign))
                     AS p (kind, value)
                WHERE d.app_id = x.app_id AND d.reference = x.reference AND p.value IS NOT NULL
            ) k
            JOIN retractions r ON r.app_id = x.app_id AND r.selector_kind = k.kind AND r.selector_value = k.value AND NOT r.dry_run
            CROSS JOIN LATERAL (
                SELECT 1 FROM deliveries d
                WHERE d.app_id = x.app_id AND d.reference = x.reference
                  AND d.sent_at >= coalesce(r.sent_after, '-infinity') AND d.sent_at < r.sent_before
                  AND CASE r.selector_kind WHEN 'thread' THEN d.thread WHEN 'sender' THEN d.sender
                                           WHEN 'recipient' THEN d.recipient ELSE d.campaign END = r.selector_value
                LIMIT 1
            ) taken
            ORDER BY 7, 3
            """,
            logger: logger)
        var briefs: [Pair: [RetractionBrief]] = [:]
        for try await row in rows {
            var columns = ColumnReader(row)
            let (appID, reference, id, state, mode, dryRun, createdAt, requestedBy, reason) = try columns.next(
                (Int64, String, UUID, String, String, Bool, Date, String, String?).self)
            let (kind, value, sentAfter, sentBefore, isEdit) = try columns.next((String?, String?, Date?, Date?, Bool).self)
            let selector = kind.flatMap(RetractionSelector.Kind.init(rawValue:)).map {
                RetractionSelector($0, value ?? "", sentAfter: sentAfter, sentBefore: sentBefore).description
            }
            briefs[Pair(appID, reference), default: []].append(
                RetractionBrief(
                    id: id, state: Retraction.State(rawValue: state) ?? .failed, mode: RetractionMode(rawValue: mode) ?? .background,
                    dryRun: dryRun, createdAt: createdAt, requestedBy: requestedBy, reason: reason, selector: selector, isEdit: isEdit))
        }
        return briefs
    }
}
