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
    /// One read for a page of devices, one row per device: the app's recent
    /// retractions, read once (`MATERIALIZED`), and each device's deliveries
    /// through `deliveries_by_device`, one probe per token, whatever the
    /// planner's statistics say: the aggregate inside the lateral subquery
    /// keeps PostgreSQL from flattening it into a join. (Flattened, a day's
    /// partition without statistics yet made it scan every delivery of each
    /// recent reference and filter them by the page's tokens: 587 ms for a
    /// page of 500 devices with 20 references of 20,000 devices each, against
    /// 17 ms this way; EXPLAIN ANALYZE in docs/performance.md.) Its cost
    /// follows what the page's devices received and how many references the
    /// app retracted in the window.
    package func recentlyRetractedReferences(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID
    ) async throws(StoreError) -> [DeviceToken: [ReferenceID]] {
        guard !devices.isEmpty else { return [:] }
        let tokens = devices.map { ByteBuffer(bytes: $0.bytes) }
        let query: PostgresQuery = """
            WITH recent AS MATERIALIZED (
                SELECT ref.reference, max(r.created_at) AS retracted_at
                FROM retractions r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
                WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND NOT r.dry_run AND r.id <> \(retractionID)
                GROUP BY ref.reference
            )
            SELECT t.token, h.refs
            FROM unnest(\(tokens)::bytea[]) AS t (token)
            CROSS JOIN LATERAL (
                SELECT array_agg(recent.reference ORDER BY recent.retracted_at DESC, recent.reference) AS refs
                FROM deliveries d JOIN recent ON recent.reference = d.reference
                WHERE d.app_id = \(appID) AND d.token = t.token
            ) h
            WHERE h.refs IS NOT NULL
            """
        return try await perform("reading the devices' recent retractions", idempotent: true) { [self] in
            var found: [DeviceToken: [ReferenceID]] = [:]
            let rows = try await client.query(query, logger: logger)
            for try await (token, references) in rows.decode((ByteBuffer, [String]).self) {
                // A reference delivered to the device on two days appears twice.
                var seen = Set<String>()
                found[DeviceToken(token)] = references.filter { seen.insert($0).inserted }.map { ReferenceID($0) }
            }
            return found
        }
    }
}
