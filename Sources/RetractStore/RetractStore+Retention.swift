import Foundation
import PostgresNIO
import RetractModel

extension RetractStore {
    /// Creates the day partitions of `deliveries` from today to
    /// ``Retention/daysAhead`` days ahead, and drops the ones wholly older than
    /// ``Retention/days``, with the notifications last sent before them.
    /// Safe to run from several processes at once.
    ///
    /// - Returns: the names of the partitions dropped.
    @discardableResult
    package func applyRetention(now: Date = Date()) async throws(StoreError) -> [String] {
        let today = UTCDay(containing: now)
        try await ensurePartitions(forDays: Set((0...retention.daysAhead).map { today.adding(days: $0) }))
        let oldestKept = today.adding(days: -(retention.days - 1))
        let expired = try await deliveryPartitions().filter { $0.day < oldestKept }
        for partition in expired {
            try await perform("dropping partition \(partition.name)", idempotent: true) { [self] in
                // The name came from the catalogue and matched deliveries_YYYYMMDD; the
                // device feed's rows of the same day go with it (migration 0017).
                try await client.query(
                    "DROP TABLE IF EXISTS \(unescaped: partition.name), \(unescaped: partition.day.feedPartitionName)", logger: logger)
            }
            _ = knownPartitions.withLockedValue { $0.remove(partition.name) }
            logger.info("dropped expired deliveries", metadata: ["partition": "\(partition.name)"])
        }
        try await dropExpiredIdempotencyRecords()
        try await perform("deleting expired notifications", idempotent: true) { [self] in
            // App by app, through the list's own index: no index leads with the time.
            try await client.query(
                """
                DELETE FROM notifications n USING apps a
                WHERE n.app_id = a.id AND n.last_sent_at < \(oldestKept.isoDate)::date::timestamp AT TIME ZONE 'UTC'
                """, logger: logger)
        }
        // A read's mark goes with the deliveries it was of (and the feed's rows of them).
        try await deleteReadMarks(before: oldestKept.start)
        return expired.map(\.name)
    }

    /// The day partitions of `deliveries`, oldest first.
    package func deliveryPartitionNames() async throws(StoreError) -> [String] {
        try await deliveryPartitions().map(\.name)
    }

    private func deliveryPartitions() async throws(StoreError) -> [(name: String, day: UTCDay)] {
        let names = try await perform("listing delivery partitions", idempotent: true) { [self] in
            try await client.query(
                """
                SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'deliveries'::regclass
                """,
                logger: logger
            ).values(of: String.self)
        }
        return names.compactMap { name in UTCDay(partitionName: name).map { (name, $0) } }.sorted { $0.day < $1.day }
    }

    /// Makes sure each day has its partition, asking the database only about
    /// days this process has not seen yet.
    func ensurePartitions(forDays days: Set<UTCDay>) async throws(StoreError) {
        let unknown = knownPartitions.withLockedValue { known in days.filter { !known.contains($0.partitionName) } }
        for day in unknown.sorted() {
            try await perform("creating the deliveries partition for \(day.isoDate)", idempotent: true) { [self] in
                try await client.query("SELECT retract_ensure_delivery_partition(\(day.isoDate)::date)", logger: logger)
            }
            _ = knownPartitions.withLockedValue { $0.insert(day.partitionName) }
        }
    }
}
