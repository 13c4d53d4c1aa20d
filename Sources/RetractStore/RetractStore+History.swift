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
    /// retractions come from `retractions_by_app`, and the page's deliveries
    /// of their references from the ledger (by device or by reference, as
    /// the planner finds cheaper). Its cost follows how many references the
    /// app retracted in the window and what the page's devices received.
    package func recentlyRetractedReferences(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID
    ) async throws(StoreError) -> [DeviceToken: [ReferenceID]] {
        guard !devices.isEmpty else { return [:] }
        let tokens = devices.map { ByteBuffer(bytes: $0.bytes) }
        let query: PostgresQuery = """
            WITH recent AS (
                SELECT ref.reference, max(r.created_at) AS retracted_at
                FROM retractions r CROSS JOIN LATERAL unnest(r.refs) AS ref (reference)
                WHERE r.app_id = \(appID) AND r.created_at >= \(since) AND NOT r.dry_run AND r.id <> \(retractionID)
                GROUP BY ref.reference
            )
            SELECT d.token, array_agg(recent.reference ORDER BY recent.retracted_at DESC, recent.reference)
            FROM recent
            JOIN deliveries d ON d.app_id = \(appID) AND d.reference = recent.reference AND d.token = ANY(\(tokens)::bytea[])
            GROUP BY d.token
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
