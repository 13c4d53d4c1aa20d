import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// For each of `devices`, what the app retracted since `since` (not in a
    /// dry run, other than retraction `excluding`) that the device received,
    /// newest retraction first, without repeats: references retracted by
    /// reference or taken by a selector (``Retraction`` keeps what a
    /// selector took, as references), and conversations retracted whole as
    /// their thread id. Devices with none are left out.
    ///
    /// A reference stands as its thread when the newest retraction that took
    /// it took the whole thread (``RetractionSelector/takesWholeThread(createdAt:)``)
    /// and no message was sent in that thread since, to any device: the id
    /// then takes from the phone exactly what the retraction took. Otherwise
    /// the references go: a later message, or an earlier one the retraction
    /// spared, must stay.
    ///
    /// Two reads for a page of devices. The first is the references the app
    /// retracted in the window, newest first, at most `listLimit` of them,
    /// each with its thread where it stands as one: nothing more is read when
    /// there are none.
    ///
    /// The second reads each device's deliveries among them through
    /// `deliveries_by_device`, one probe per token whatever the planner's
    /// statistics say. The aggregate inside the lateral subquery keeps
    /// PostgreSQL from flattening it into a join from the references; on a
    /// day's partition without statistics yet, that join scanned every
    /// delivery of each recent reference: 587 ms for a page of 500 devices
    /// with 20 references of 20,000 devices each, against 9 ms this way
    /// (docs/performance.md).
    ///
    /// Up to `listLimit` references, the list goes in as a parameter, which
    /// PostgreSQL plans as a constant and so checks each delivery against
    /// with a hash. Each device's references come back in the index's
    /// order, unsorted: sorting them there, a sort for every device, cost a
    /// third of the read (docs/performance.md). Devices that received the
    /// same references in the same order, as the devices of a conversation
    /// or a broadcast mostly do, still come back as one row; here each
    /// row's references are put newest first without repeats, and rows
    /// that come to the same list share one array. A busier app (a chat
    /// deleting thousands of messages a day) would send the list back and
    /// forth for every page, so beyond the limit PostgreSQL reads it again
    /// and joins it itself.
    ///
    /// Either way the probe reads only from the first to the last day the
    /// recent references were delivered on (`delivered_from` to
    /// `delivered_through` of their retractions), so PostgreSQL leaves the
    /// other day partitions out of the plan: retention keeps 32 of them, and
    /// probing every one for every device cost most of the read
    /// (docs/performance.md). The day is in
    /// `deliveries_by_device` after the token (migration 0014), so the probe
    /// has one index that holds all it reads: without it, the primary key was
    /// that index, and PostgreSQL without statistics for an app probed through
    /// it, reading all the app's deliveries for each token. When a recent
    /// retraction's days are not known (made before they were recorded), every
    /// day is read.
    package func recentRetractions(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID, listLimit: Int = 1_000
    ) async throws(StoreError) -> [DeviceToken: [PayloadBuilder.Retracted]] {
        guard !devices.isEmpty else { return [:] }
        return try await perform("reading the devices' recent retractions", idempotent: true) { [self] in
            guard
                let probe = try await historyProbe(
                    appID: appID, devices: devices, since: since, excluding: retractionID, listLimit: listLimit)
            else { return [:] }
            var found: [DeviceToken: [PayloadBuilder.Retracted]] = [:]
            // One array for each list, however many rows come to it.
            var histories: [[String]: [PayloadBuilder.Retracted]] = [:]
            for try await (references, devices) in try await client.query(probe.query, logger: logger).decode(([String], [ByteBuffer]).self)
            {
                var seen = Set<String>()
                let ordered =
                    probe.order.map { order in references.sorted { order[$0, default: .max] < order[$1, default: .max] } } ?? references
                let newestFirst = ordered.filter { seen.insert($0).inserted }
                let history: [PayloadBuilder.Retracted]
                if let known = histories[newestFirst] {
                    history = known
                } else {
                    // Each reference as itself or its thread (joined by PostgreSQL, `r` or `t` and the
                    // one or the other), each thread once.
                    var threads = Set<String>()
                    history = newestFirst.compactMap { item -> PayloadBuilder.Retracted? in
                        let (reference, thread): (String, String?) =
                            probe.order == nil
                            ? (String(item.dropFirst()), item.hasPrefix("t") ? String(item.dropFirst()) : nil) : (item, probe.threads[item])
                        guard let thread else { return .reference(ReferenceID(reference)) }
                        return threads.insert(thread).inserted ? .thread(thread) : nil
                    }
                    histories[newestFirst] = history
                }
                for token in devices { found[DeviceToken(token)] = history }
            }
            return found
        }
    }

    /// The first read of ``recentRetractions(appID:devices:since:excluding:listLimit:)``
    /// (the recent references, the threads some stand as, and their days),
    /// then the second one's query, not run: the probe of the devices'
    /// deliveries, with each reference's place newest first when the
    /// references go in as a list. Nil when no device can have received a
    /// recent reference. Separate so that a test can see PostgreSQL's plan
    /// for the probe.
    package func historyProbe(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID, listLimit: Int = 1_000
    ) async throws -> (query: PostgresQuery, order: [String: Int]?, threads: [String: String])? {
        // The app's retractions in the window, each with `refs` (what it named, or what its
        // selector took) and `whole_thread` (its thread, when it took the whole thread and
        // nothing was sent in the thread since: one probe of the notifications' thread index).
        // Each row also carries the days of all the window's references (the window functions
        // run before the limit): their first and last, and whether every retraction that found
        // deliveries knows its days.
        let recentQuery: PostgresQuery = """
            WITH recent AS MATERIALIZED (
                SELECT r.created_at, r.delivered_from, r.delivered_through, r.total, r.refs || coalesce(r.taken_refs, '{}') AS refs,
                       CASE WHEN r.selector_kind = 'thread' AND r.sent_after IS NULL AND r.sent_before >= r.created_at
                                 AND NOT EXISTS (SELECT FROM notifications n WHERE n.app_id = r.app_id AND n.thread = r.selector_value
                                                                             AND n.last_sent_at >= r.sent_before)
                            THEN r.selector_value END AS whole_thread
                FROM retractions r
                WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND \(unescaped: Self.takesDeliveries) AND r.id <> \(retractionID)
            )
            SELECT ref.reference, (array_agg(r.whole_thread ORDER BY r.created_at DESC))[1],
                   min(min(r.delivered_from)) OVER (), max(max(r.delivered_through)) OVER (),
                   bool_and(bool_and(r.delivered_from IS NOT NULL OR r.total = 0)) OVER ()
            FROM recent r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
            GROUP BY ref.reference
            ORDER BY max(r.created_at) DESC, ref.reference
            LIMIT \(listLimit + 1)
            """
        var recent: [String] = []
        var threads: [String: String] = [:]
        var days: (from: UTCDay?, through: UTCDay?, known: Bool) = (nil, nil, false)
        for try await (reference, thread, from, through, known) in try await client.query(recentQuery, logger: logger).decode(
            (String, String?, UTCDay?, UTCDay?, Bool).self)
        {
            recent.append(reference)
            if let thread { threads[reference] = thread }
            days = (from, through, known)
        }
        guard !recent.isEmpty else { return nil }
        // Every recent retraction found nothing to take: no device can have received its references.
        if days.known && days.from == nil && days.through == nil { return nil }
        let from = days.known ? days.from ?? .beforeAll : .beforeAll
        let through = days.known ? days.through ?? .afterAll : .afterAll
        let tokens = devices.map { ByteBuffer(bytes: $0.bytes) }
        guard recent.count <= listLimit else {
            // Ordered newest first here; a reference delivered on two days appears twice.
            // Each reference as `r` and itself, or `t` and the thread it stands as.
            let query: PostgresQuery = """
                WITH window_retractions AS MATERIALIZED (
                    SELECT r.created_at, r.delivered_from, r.delivered_through, r.total, r.refs || coalesce(r.taken_refs, '{}') AS refs,
                           CASE WHEN r.selector_kind = 'thread' AND r.sent_after IS NULL AND r.sent_before >= r.created_at
                                     AND NOT EXISTS (SELECT FROM notifications n WHERE n.app_id = r.app_id AND n.thread = r.selector_value
                                                                                 AND n.last_sent_at >= r.sent_before)
                                THEN r.selector_value END AS whole_thread
                    FROM retractions r
                    WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND \(unescaped: Self.takesDeliveries) AND r.id <> \(retractionID)
                ),
                recent AS MATERIALIZED (
                    SELECT ref.reference, max(r.created_at) AS retracted_at,
                           (array_agg(r.whole_thread ORDER BY r.created_at DESC))[1] AS thread
                    FROM window_retractions r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
                    GROUP BY ref.reference
                )
                SELECT h.refs, array_agg(t.token)
                FROM unnest(\(tokens)::bytea[]) AS t (token)
                CROSS JOIN LATERAL (
                    SELECT array_agg(coalesce('t' || recent.thread, 'r' || recent.reference)
                                     ORDER BY recent.retracted_at DESC, recent.reference) AS refs
                    FROM deliveries d JOIN recent ON recent.reference = d.reference
                    WHERE d.app_id = \(appID) AND d.token = t.token AND d.sent_on BETWEEN \(from) AND \(through)
                ) h
                WHERE h.refs IS NOT NULL
                GROUP BY h.refs
                """
            return (query, nil, [:])
        }
        let query: PostgresQuery = """
            SELECT h.refs, array_agg(t.token)
            FROM unnest(\(tokens)::bytea[]) AS t (token)
            CROSS JOIN LATERAL (
                SELECT array_agg(d.reference) AS refs
                FROM deliveries d
                WHERE d.app_id = \(appID) AND d.token = t.token AND d.reference = ANY(\(recent)::text[])
                  AND d.sent_on BETWEEN \(from) AND \(through)
            ) h
            WHERE h.refs IS NOT NULL
            GROUP BY h.refs
            """
        // Each reference's place in the list: newest retraction first.
        return (query, Dictionary(recent.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first }), threads)
    }
}
