import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

@testable import RetractStore

/// Reads taken together in one statement (``RetractStore/recordRead(_:)``
/// batches them under load): each read is answered for itself, and the
/// ledger ends up as if they had come one after the other.
@Suite("Reads taken together")
struct ReadBatchTests {
    /// Users 0 and 1, three phones each (the first reads), three messages of
    /// their own conversation a second apart.
    private static func record(_ store: RetractStore, app: App, start: Date) async throws {
        var deliveries: [Delivery] = []
        for user in 0..<2 {
            for message in 1...3 {
                for phone in 0..<3 {
                    deliveries.append(
                        Delivery(
                            appID: app.id, reference: ReferenceID("m-\(user)-\(message)"), token: Fixture.token(user * 10 + phone),
                            sentAt: start.addingTimeInterval(Double(message)),
                            labels: DeliveryLabels(thread: "c-\(user)", recipient: "u-\(user)")))
                }
            }
        }
        _ = try await store.record(deliveries)
    }

    private static func read(_ app: App, user: Int, upTo point: ReadPoint, badge: Int?) -> ReadRecord {
        ReadRecord(appID: app.id, recipient: "u-\(user)", thread: "c-\(user)", point: point, reader: Fixture.token(user * 10), badge: badge)
    }

    @Test func readsInOneStatementAreEachAnsweredAndEachDeliveryIsListedOnceUnderTheNewest() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let start = Date().addingTimeInterval(-60)
            try await Self.record(store, app: app, start: start)
            let batch = [
                // User 0 reads up to message 2, then (the same batch) up to message 3: one mark per phone, message 3's badge.
                Self.read(app, user: 0, upTo: .reference("m-0-2"), badge: 5),
                Self.read(app, user: 0, upTo: .reference("m-0-3"), badge: 4),
                // User 1 reads up to just after message 1: messages 2 and 3 stay.
                Self.read(app, user: 1, upTo: .time(start.addingTimeInterval(1.5)), badge: nil),
                // A reference never recorded: no point, nothing taken.
                Self.read(app, user: 1, upTo: .reference("m-9-9"), badge: nil),
            ]
            let answers = try await store.recordReads(batch).map { try $0.get() }
            #expect(answers.map(\.devices) == [2, 2, 2, 0])
            #expect(answers.map(\.deliveries) == [4, 6, 2, 0])
            #expect(answers[0].upTo.map { abs($0.timeIntervalSince(start.addingTimeInterval(2))) < 0.001 } == true)
            #expect(answers[3].upTo == nil)

            // The feed lists each (phone, message) once, under the newest read that took it.
            var listed: [String: [String]] = [:]
            let feed: PostgresQuery = """
                SELECT f.retraction_id, f.reference FROM device_feed f WHERE f.app_id = \(app.id) ORDER BY f.reference, f.token
                """
            for try await (id, reference) in try await store.client.query(feed, logger: TestDatabase.logger).decode((UUID, String).self) {
                listed[reference, default: []].append(id == batch[1].id ? "newer" : id == batch[0].id ? "older" : "\(id)")
            }
            #expect(listed["m-0-1"] == ["newer", "newer"])
            #expect(listed["m-0-2"] == ["newer", "newer"])
            #expect(listed["m-0-3"] == ["newer", "newer"])
            #expect(listed["m-1-1"]?.count == 2)
            #expect(listed["m-1-2"] == nil && listed["m-1-3"] == nil)

            // One mark per phone and conversation, owed a push, with the newest read's badge and every message once.
            let marks: PostgresQuery = """
                SELECT m.thread, m.refs, m.badge, m.generation, m.pending FROM read_marks m WHERE m.app_id = \(app.id) ORDER BY m.thread, m.token
                """
            var rows: [String] = []
            for try await (thread, refs, badge, generation, pending) in try await store.client.query(marks, logger: TestDatabase.logger)
                .decode((String, [String], Int?, Int64, Bool).self)
            {
                rows.append("\(thread) \(refs.joined(separator: ",")) \(badge.map(String.init) ?? "-") \(generation) \(pending)")
            }
            #expect(
                rows == [
                    "c-0 m-0-3,m-0-2,m-0-1 4 1 true", "c-0 m-0-3,m-0-2,m-0-1 4 1 true",
                    "c-1 m-1-1 - 1 true", "c-1 m-1-1 - 1 true",
                ])

            // A later read alone takes only what came after the marks.
            let later = try await store.recordRead(Self.read(app, user: 1, upTo: .reference("m-1-3"), badge: 0))
            #expect(later.devices == 2 && later.deliveries == 4)
        }
    }
}
