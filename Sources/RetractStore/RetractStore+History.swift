import Foundation
import NIOCore
import PostgresNIO
import RetractKit

extension RetractStore {
    /// For each of `devices`, the references the app retracted since `since`
    /// (by reference, not in a dry run, other than retraction `excluding`)
    /// that the device received, newest retraction first, without repeats.
    /// Devices with none are left out.
    ///
    /// Two reads for a page of devices. The first is the references the app
    /// retracted in the window, newest first, at most `listLimit` of them:
    /// nothing more is read when there are none.
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
    package func recentlyRetractedReferences(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID, listLimit: Int = 1_000
    ) async throws(StoreError) -> [DeviceToken: [ReferenceID]] {
        guard !devices.isEmpty else { return [:] }
        let recentQuery: PostgresQuery = """
            SELECT ref.reference
            FROM retractions r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
            WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND NOT r.dry_run AND r.id <> \(retractionID)
            GROUP BY ref.reference
            ORDER BY max(r.created_at) DESC, ref.reference
            LIMIT \(listLimit + 1)
            """
        return try await perform("reading the devices' recent retractions", idempotent: true) { [self] in
            var recent: [String] = []
            for try await reference in try await client.query(recentQuery, logger: logger).decode(String.self) {
                recent.append(reference)
            }
            guard !recent.isEmpty else { return [:] }
            let tokens = devices.map { ByteBuffer(bytes: $0.bytes) }
            let query: PostgresQuery
            var order: [String: Int]?
            if recent.count <= listLimit {
                query = """
                    SELECT h.refs, array_agg(t.token)
                    FROM unnest(\(tokens)::bytea[]) AS t (token)
                    CROSS JOIN LATERAL (
                        SELECT array_agg(d.reference) AS refs
                        FROM deliveries d
                        WHERE d.app_id = \(appID) AND d.token = t.token AND d.reference = ANY(\(recent)::text[])
                    ) h
                    WHERE h.refs IS NOT NULL
                    GROUP BY h.refs
                    """
                // Each reference's place in the list: newest retraction first.
                order = Dictionary(recent.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            } else {
                // Ordered newest first here; a reference delivered on two days appears twice.
                query = """
                    WITH recent AS MATERIALIZED (
                        SELECT ref.reference, max(r.created_at) AS retracted_at
                        FROM retractions r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
                        WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND NOT r.dry_run AND r.id <> \(retractionID)
                        GROUP BY ref.reference
                    )
                    SELECT h.refs, array_agg(t.token)
                    FROM unnest(\(tokens)::bytea[]) AS t (token)
                    CROSS JOIN LATERAL (
                        SELECT array_agg(recent.reference ORDER BY recent.retracted_at DESC, recent.reference) AS refs
                        FROM deliveries d JOIN recent ON recent.reference = d.reference
                        WHERE d.app_id = \(appID) AND d.token = t.token
                    ) h
                    WHERE h.refs IS NOT NULL
                    GROUP BY h.refs
                    """
            }
            var found: [DeviceToken: [ReferenceID]] = [:]
            // One array for each list, however many rows come to it.
            var histories: [[String]: [ReferenceID]] = [:]
            for try await (references, devices) in try await client.query(query, logger: logger).decode(([String], [ByteBuffer]).self) {
                var seen = Set<String>()
                let ordered = order.map { order in references.sorted { order[$0, default: .max] < order[$1, default: .max] } } ?? references
                let newestFirst = ordered.filter { seen.insert($0).inserted }
                let history: [ReferenceID]
                if let known = histories[newestFirst] {
                    history = known
                } else {
                    history = newestFirst.map { ReferenceID($0) }
                    histories[newestFirst] = history
                }
                for token in devices { found[DeviceToken(token)] = history }
            }
            return found
        }
    }
}
