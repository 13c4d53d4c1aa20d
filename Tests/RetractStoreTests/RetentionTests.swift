import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@Suite("Retention")
struct RetentionTests {
    @Test func retentionDropsExactlyThePartitionsOlderThanItsDays() async throws {
        try await TestDatabase.withStore(retention: Retention(days: 30, daysAhead: 2)) { store, _ in
            let app = try await Fixture.registerApp(store)
            let now = Date()
            let day: TimeInterval = 86_400
            // Deliveries 45, 31, 30, 29 and 0 days old; recorded as if "now" were when they were sent.
            for (index, age) in [45, 31, 30, 29, 0].enumerated() {
                let sentAt = now.addingTimeInterval(-Double(age) * day)
                try await store.record(
                    Fixture.deliveries(app: app, reference: ReferenceID("age-\(age)"), tokens: [index], at: sentAt), now: sentAt)
            }
            let before = try await store.deliveryPartitionNames()
            #expect(before.count == 5)

            let dropped = try await store.applyRetention(now: now)
            // Kept: today and the 29 days before it. Dropped: the days 30, 31 and 45 days ago.
            #expect(dropped == [45, 31, 30].map { partitionName(now.addingTimeInterval(-Double($0) * day)) })
            let after = try await store.deliveryPartitionNames()
            #expect(after == [29, 0, -1, -2].map { partitionName(now.addingTimeInterval(-Double($0) * day)) })
            let references = try await store.client.query("SELECT reference FROM deliveries ORDER BY sent_at", logger: TestDatabase.logger)
            var kept: [String] = []
            for try await reference in references.decode(String.self) { kept.append(reference) }
            #expect(kept == ["age-29", "age-0"])
            // The notification list forgets what it no longer has deliveries of.
            let listed = try await store.notificationPage(NotificationQuery(limit: 10)).notifications.map(\.reference)
            #expect(listed == ["age-0", "age-29"])
            #expect(try await store.applyRetention(now: now).isEmpty)
        }
    }

    @Test func concurrentWritersCreateEachDayOnce() async throws {
        try await TestDatabase.withStore { store, url in
            let app = try await Fixture.registerApp(store)
            let recorded = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<4 {
                    // Stores of their own: none knows the partition exists.
                    group.addTask {
                        try await RetractStore.withStore(url: url, maximumConnections: 1, logger: TestDatabase.logger) { other in
                            try await other.record(Fixture.deliveries(app: app, reference: "r", tokens: [writer]))
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(recorded == 4)
            #expect(try await store.deliveryPartitionNames().count == 1)
            #expect(try await Fixture.scalar(store, "SELECT count(*) FROM deliveries", as: Int.self) == 4)
        }
    }

    private func partitionName(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyyMMdd"
        return "deliveries_" + formatter.string(from: date)
    }
}
