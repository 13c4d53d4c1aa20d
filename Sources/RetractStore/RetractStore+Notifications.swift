import Foundation
import NIOCore
import PostgresNIO
import RetractKit

extension RetractStore {
    /// A page of the notifications the ledger holds, most recently sent
    /// first (then by reference and app), each with the retractions that
    /// take it.
    ///
    /// Groups the deliveries the query selects by app and reference: the
    /// cost grows with the deliveries in the range (only the day partitions
    /// of `sentAfter`...`sentBefore` are read; a thread or campaign is read
    /// through its label's index within each app), not with the page's
    /// depth. A console should give a range. Each notification of the page
    /// is then counted through the primary key.
    package func notificationPage(_ query: NotificationQuery) async throws(StoreError) -> NotificationPage {
        if let (field, problem) = query.problem { throw StoreError(.invalidInput, "\(field): \(problem)") }
        var binds = PostgresBindings()
        func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
            binds.append(value)
            return "$\(binds.count)"
        }
        // What selects the deliveries: in the page's grouping and again in each notification's counts.
        var selected: [String] = []
        if let after = query.sentAfter {
            let at = bind(after)
            selected.append("d.sent_at >= \(at)::timestamptz AND d.sent_on >= (\(at)::timestamptz AT TIME ZONE 'UTC')::date")
        }
        if let before = query.sentBefore {
            let at = bind(before)
            selected.append("d.sent_at < \(at)::timestamptz AND d.sent_on <= (\(at)::timestamptz AT TIME ZONE 'UTC')::date")
        }
        if let thread = query.thread { selected.append("d.thread = \(bind(thread))::text") }
        if let campaign = query.campaign { selected.append("d.campaign = \(bind(campaign))::text") }
        var listed = selected
        if let apps = query.appIDs { listed.append("d.app_id = ANY(\(bind(apps.sorted()))::bigint[])") }
        if let reference = query.reference { listed.append("d.reference = \(bind(reference))::text") }
        var after = "true"
        if let cursor = query.cursor {
            let at = "('epoch'::timestamptz + \(bind(cursor.microseconds))::bigint * interval '1 microsecond')"
            after =
                "max(d.sent_at) < \(at) OR (max(d.sent_at) = \(at) AND (d.reference, d.app_id) > (\(bind(cursor.reference))::text, \(bind(cursor.appID))::bigint))"
        }
        let limit = bind(query.limit + 1)
        func conditions(_ list: [String]) -> String { list.isEmpty ? "true" : list.joined(separator: " AND ") }
        let sql = PostgresQuery(
            unsafeSQL: """
                WITH page AS (
                    SELECT d.app_id, d.reference, max(d.sent_at) AS last_sent
                    FROM deliveries d
                    WHERE \(conditions(listed))
                    GROUP BY d.app_id, d.reference
                    HAVING \(after)
                    ORDER BY last_sent DESC, d.reference, d.app_id
                    LIMIT \(limit)
                )
                SELECT p.app_id, a.name, p.reference, (extract(epoch FROM p.last_sent) * 1000000)::bigint,
                       s.devices, s.dead, s.first_sent, p.last_sent, s.thread, s.campaign
                FROM page p
                JOIN apps a ON a.id = p.app_id
                CROSS JOIN LATERAL (
                    SELECT count(*) AS devices, count(dt.token) AS dead, min(t.first_sent) AS first_sent,
                           max(t.thread) AS thread, max(t.campaign) AS campaign
                    FROM (
                        SELECT d.token, min(d.sent_at) AS first_sent, max(d.thread) AS thread, max(d.campaign) AS campaign
                        FROM deliveries d
                        WHERE d.app_id = p.app_id AND d.reference = p.reference AND \(conditions(selected))
                        GROUP BY d.token
                    ) t
                    LEFT JOIN dead_tokens dt ON dt.app_id = p.app_id AND dt.token = t.token
                ) s
                ORDER BY p.last_sent DESC, p.reference, p.app_id
                """,
            binds: binds)
        return try await perform("listing notifications", idempotent: true) { [self] in
            var found: [(NotificationSummary, NotificationCursor)] = []
            let rows = try await client.query(sql, logger: logger)
            for try await row in rows {
                let (appID, appName, reference, micros, devices, dead) = try row.decode((Int64, String, String, Int64, Int, Int).self)
                let (first, last, thread, campaign) = try row.decode((Date, Date, String?, String?).self, startingAt: 6)
                found.append(
                    (
                        NotificationSummary(
                            appID: appID, appName: appName, reference: reference, devices: devices, deadDevices: dead, firstSentAt: first,
                            lastSentAt: last, thread: thread, campaign: campaign, retractions: []),
                        NotificationCursor(microseconds: micros, reference: reference, appID: appID)
                    ))
            }
            var notifications = found.prefix(query.limit).map(\.0)
            let briefs = try await Self.retractionBriefs(of: notifications.map { ($0.appID, $0.reference) }, client: client, logger: logger)
            for index in notifications.indices {
                notifications[index].retractions = briefs[Pair(notifications[index].appID, notifications[index].reference)] ?? []
            }
            return NotificationPage(notifications: notifications, next: found.count > query.limit ? found[query.limit - 1].1 : nil)
        }
    }

    /// One notification over all of its deliveries, and its first
    /// `deviceLimit` devices in token order; nil when the app has no
    /// delivery of `reference`.
    package func notificationDetail(appID: Int64, reference: String, deviceLimit: Int) async throws(StoreError) -> NotificationDetail? {
        guard deviceLimit >= 0 else { throw StoreError(.invalidInput, "deviceLimit: \(deviceLimit); 0 or more") }
        let page = try await notificationPage(NotificationQuery(appIDs: [appID], reference: reference, limit: 1))
        guard let summary = page.notifications.first else { return nil }
        guard deviceLimit > 0 else { return NotificationDetail(summary: summary, devices: []) }
        let devices = try await perform("reading the devices of \(reference)", idempotent: true) { [self] in
            let rows = try await client.query(
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
            "r.id, r.state, r.mode, r.dry_run, r.created_at, r.requested_by, r.reason, r.selector_kind, r.selector_value, r.sent_after, r.sent_before"
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
            let (appID, reference, id, state, mode, dryRun, createdAt, requestedBy, reason) = try row.decode(
                (Int64, String, UUID, String, String, Bool, Date, String, String?).self)
            let (kind, value, sentAfter, sentBefore) = try row.decode((String?, String?, Date?, Date?).self, startingAt: 9)
            let selector = kind.flatMap(RetractionSelector.Kind.init(rawValue:)).map {
                RetractionSelector($0, value ?? "", sentAfter: sentAfter, sentBefore: sentBefore).description
            }
            briefs[Pair(appID, reference), default: []].append(
                RetractionBrief(
                    id: id, state: Retraction.State(rawValue: state) ?? .failed, mode: RetractionMode(rawValue: mode) ?? .background,
                    dryRun: dryRun, createdAt: createdAt, requestedBy: requestedBy, reason: reason, selector: selector))
        }
        return briefs
    }
}
