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
    /// One read for a page of devices. The app's recent retractions are read
    /// once (`MATERIALIZED`), as one list, newest first; then each device's
    /// deliveries among them, through `deliveries_by_device`, one probe per
    /// token whatever the planner's statistics say (the aggregate inside the
    /// lateral subquery keeps PostgreSQL from flattening it into a join from
    /// the references, which on a day's partition without statistics yet
    /// scanned every delivery of each recent reference: 587 ms for a page of
    /// 500 devices with 20 references of 20,000 devices each, against 13 ms
    /// this way; docs/performance.md). Devices with the same references come
    /// back as one row, as the devices of a conversation or a broadcast
    /// mostly do, and share one array here. Its cost follows what the page's
    /// devices received and how many references the app retracted in the window.
    package func recentlyRetractedReferences(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID
    ) async throws(StoreError) -> [DeviceToken: [ReferenceID]] {
        guard !devices.isEmpty else { return [:] }
        let tokens = devices.map { ByteBuffer(bytes: $0.bytes) }
        let query: PostgresQuery = """
            WITH recent AS MATERIALIZED (
                SELECT array_agg(reference ORDER BY retracted_at DESC, reference) AS refs
                FROM (
                    SELECT ref.reference, max(r.created_at) AS retracted_at
                    FROM retractions r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
                    WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND NOT r.dry_run AND r.id <> \(retractionID)
                    GROUP BY ref.reference
                ) retracted
            )
            SELECT (SELECT refs FROM recent), h.refs, array_agg(t.token)
            FROM unnest(\(tokens)::bytea[]) AS t (token)
            CROSS JOIN LATERAL (
                SELECT array_agg(d.reference) AS refs
                FROM deliveries d
                WHERE d.app_id = \(appID) AND d.token = t.token AND d.reference = ANY((SELECT refs FROM recent)::text[])
            ) h
            WHERE (SELECT refs FROM recent) IS NOT NULL AND h.refs IS NOT NULL
            GROUP BY h.refs
            """
        return try await perform("reading the devices' recent retractions", idempotent: true) { [self] in
            var found: [DeviceToken: [ReferenceID]] = [:]
            // Each reference's place in the recent list, the same in every row.
            var order: [String: Int] = [:]
            let rows = try await client.query(query, logger: logger)
            for try await (recent, references, devices) in rows.decode(([String], [String], [ByteBuffer]).self) {
                if order.isEmpty { order = Dictionary(recent.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first }) }
                // Newest retraction first; a reference delivered to the device on two days appears twice.
                let history = Set(references).sorted { order[$0, default: .max] < order[$1, default: .max] }.map { ReferenceID($0) }
                for token in devices { found[DeviceToken(token)] = history }
            }
            return found
        }
    }
}
