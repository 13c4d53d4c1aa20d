import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// What a page of devices had retracted recently: what rides along in their
/// retraction pushes (docs/engine.md, "Earlier retractions ride along").
@Suite("Recent retractions per device")
struct HistoryTests {
    @Test func aPageOfDevicesGetsItsOwnRecentRetractionsNewestFirstInOneRead() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let other = try await Fixture.registerApp(store, name: "other")
            try await store.record(
                Fixture.deliveries(app: chat, reference: "m1", tokens: 0..<3)
                    + Fixture.deliveries(app: chat, reference: "m2", tokens: 0..<2)
                    + Fixture.deliveries(app: chat, reference: "m3", tokens: [0])
                    + Fixture.deliveries(app: chat, reference: "m4", tokens: [1])
                    + Fixture.deliveries(app: chat, reference: "m5", tokens: [0])
                    + Fixture.deliveries(app: other, reference: "m9", tokens: [0]))
            func retract(_ references: [ReferenceID], app: App = chat, dryRun: Bool = false) async throws -> UUID {
                try await store.createRetraction(
                    RetractionRequest(appID: app.id, target: .references(references), requestedBy: "tests", dryRun: dryRun)
                ).0.id
            }
            _ = try await retract(["m1"])
            // Later transactions, later times: m2 and m4 are newer than m1.
            try await Task.sleep(for: .milliseconds(20))
            _ = try await retract(["m2", "m4"])
            _ = try await retract(["m5"], dryRun: true)
            _ = try await retract(["m9"], app: other)
            try await Task.sleep(for: .milliseconds(20))
            let current = try await retract(["m3"])

            // The list passed to the read, and (more recent references than the limit) joined by PostgreSQL.
            for listLimit in [1_000, 1] {
                let found = try await store.recentRetractions(
                    appID: chat.id, devices: (0..<4).map(Fixture.token), since: Date().addingTimeInterval(-3600), excluding: current,
                    listLimit: listLimit)
                // Newest first; the dry run, the other app, the current retraction and devices with none are left out.
                #expect(
                    found == [
                        Fixture.token(0): .references("m2", "m1"), Fixture.token(1): .references("m2", "m4", "m1"),
                        Fixture.token(2): .references("m1"),
                    ],
                    "list limit \(listLimit)")
            }

            // Outside the window: nothing.
            let none = try await store.recentRetractions(
                appID: chat.id, devices: (0..<4).map(Fixture.token), since: Date().addingTimeInterval(60), excluding: current)
            #expect(none.isEmpty)
        }
    }

    /// Devices with the same references get one array between them, whatever
    /// order they received them in and however often.
    @Test func devicesWithTheSameHistoryShareItAndARepeatCountsOnce() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let yesterday = Date().addingTimeInterval(-86_400)
            try await store.record(
                Fixture.deliveries(app: chat, reference: "m2", tokens: [5])
                    + Fixture.deliveries(app: chat, reference: "m1", tokens: [5, 6])
                    + Fixture.deliveries(app: chat, reference: "m2", tokens: [6])
                    // m1 reached token 5 on two days too; token 7 got m1 only.
                    + Fixture.deliveries(app: chat, reference: "m1", tokens: [5, 7], at: yesterday))
            _ = try await store.createRetraction(RetractionRequest(appID: chat.id, target: .references(["m1"]), requestedBy: "tests"))
            try await Task.sleep(for: .milliseconds(20))
            _ = try await store.createRetraction(RetractionRequest(appID: chat.id, target: .references(["m2"]), requestedBy: "tests"))
            let current = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .references(["m3"]), requestedBy: "tests")
            ).0.id

            let joined = try await store.recentRetractions(
                appID: chat.id, devices: [5, 6, 7].map(Fixture.token), since: Date().addingTimeInterval(-3600), excluding: current,
                listLimit: 1)
            #expect(
                joined == [
                    Fixture.token(5): .references("m2", "m1"), Fixture.token(6): .references("m2", "m1"),
                    Fixture.token(7): .references("m1"),
                ])
            let found = try await store.recentRetractions(
                appID: chat.id, devices: [5, 6, 7].map(Fixture.token), since: Date().addingTimeInterval(-3600), excluding: current)
            #expect(found == joined)
            // One array for the two devices with the same history: it compares equal without looking at its elements.
            let shared = try #require(found[Fixture.token(5)])
            let other = try #require(found[Fixture.token(6)])
            #expect(shared.withUnsafeBufferPointer { $0.baseAddress } == other.withUnsafeBufferPointer { $0.baseAddress })
        }
    }

    /// The days a retraction's references were delivered on, as recorded, and
    /// what the read then finds: a delivery recorded late, on another day,
    /// comes with the days of its own retraction; a retraction whose days are
    /// not known has every day read.
    @Test func theReadFindsDeliveriesOnTheDaysRecordedAndEveryDayWhenNotKnown() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let now = Date()
            let (yesterday, threeDaysAgo) = (now.addingTimeInterval(-86_400), now.addingTimeInterval(-3 * 86_400))
            try await store.record(
                Fixture.deliveries(app: chat, reference: "m1", tokens: [0], at: yesterday)
                    + Fixture.deliveries(app: chat, reference: "m1", tokens: [1], at: now)
                    + Fixture.deliveries(app: chat, reference: "m2", tokens: [2], at: now))
            let (first, _) = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .references(["m1"]), requestedBy: "tests"))
            // Recorded after the retraction, three days back: retracted as late, with its own days.
            try await store.record(Fixture.deliveries(app: chat, reference: "m1", tokens: [3], at: threeDaysAgo))
            let current = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .references(["m9"]), requestedBy: "tests")
            ).0.id

            func days() async throws -> String? {
                try await TestDatabase.value(
                    """
                    SELECT string_agg(requested_by || ' ' || coalesce(delivered_from::text, '-') || ' ' || coalesce(delivered_through::text, '-'),
                                      ', ' ORDER BY created_at)
                    FROM retractions WHERE app_id = \(chat.id)
                    """, on: store)
            }
            func iso(_ date: Date) -> String { String(ISO8601DateFormatter().string(from: date).prefix(10)) }
            #expect(
                try await days()
                    == "tests \(iso(yesterday)) \(iso(now)), \(RetractStore.lateDeliveryActor) \(iso(threeDaysAgo)) \(iso(threeDaysAgo)), tests - -"
            )
            let tokens = (0..<4).map(Fixture.token)
            let expected: [DeviceToken: [PayloadBuilder.Retracted]] = [
                Fixture.token(0): .references("m1"), Fixture.token(1): .references("m1"), Fixture.token(3): .references("m1"),
            ]
            for listLimit in [1_000, 0] {
                let found = try await store.recentRetractions(
                    appID: chat.id, devices: tokens, since: now.addingTimeInterval(-3600), excluding: current, listLimit: listLimit)
                #expect(found == expected, "list limit \(listLimit)")
            }

            // One day without the other is refused.
            await #expect(throws: (any Error).self) {
                try await TestDatabase.execute("UPDATE retractions SET delivered_through = NULL WHERE id = '\(first.id)'", on: store)
            }
            // Days not known (a retraction made before they were recorded): every day is read. Were only the
            // days known read, the late retraction's alone, tokens 0 and 1 would be missed.
            try await TestDatabase.execute(
                "UPDATE retractions SET delivered_from = NULL, delivered_through = NULL WHERE id = '\(first.id)'", on: store)
            for listLimit in [1_000, 0] {
                let unknown = try await store.recentRetractions(
                    appID: chat.id, devices: tokens, since: now.addingTimeInterval(-3600), excluding: current, listLimit: listLimit)
                #expect(unknown == expected, "list limit \(listLimit)")
            }
        }
    }

    /// The probe reads `deliveries_by_device` for an app PostgreSQL has no
    /// statistics for yet, vacuumed (as autovacuum leaves a day's deliveries)
    /// and not analyzed, as well as once analyzed. With the day bound in the
    /// probe and the day not in that index, the primary key was the one index
    /// holding every column the probe reads, and unanalyzed PostgreSQL chose
    /// it: all the app's deliveries read for each token (docs/performance.md).
    @Test func theProbeReadsTheDeviceIndexWithAndWithoutStatistics() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let references: [ReferenceID] = (0...20).map { ReferenceID("m\($0)") }
            try await store.record(references.flatMap { Fixture.deliveries(app: chat, reference: $0, tokens: 0..<2_000) })
            for reference in references.dropLast() {
                _ = try await store.createRetraction(
                    RetractionRequest(appID: chat.id, target: .references([reference]), requestedBy: "tests"))
            }
            let current = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .references([references.last!]), requestedBy: "tests")
            ).0.id
            // The index itself: its columns are what the probe's conditions need.
            let definition = try await TestDatabase.value(
                "SELECT pg_get_indexdef('deliveries_by_device'::regclass)", of: String.self, on: store)
            #expect(definition?.hasSuffix("(app_id, token, sent_on) INCLUDE (reference)") == true, "\(definition ?? "no index")")
            let deviceIndexes = try await store.client.query(
                "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'deliveries_by_device'::regclass",
                logger: TestDatabase.logger
            ).decode(String.self).reduce(into: Set<String>()) { $0.insert($1) }
            // Each index the plan scans, however it scans it.
            let indexScan = try Regex(#"(?:Index Scan|Index Only Scan|Bitmap Index Scan) (?:Backward )?(?:using|on) (\S+)"#)
            for statistics in ["VACUUM deliveries", "ANALYZE deliveries"] {
                try await TestDatabase.execute(statistics, on: store)
                for listLimit in [1_000, 1] {
                    let probe = try #require(
                        try await store.historyProbe(
                            appID: chat.id, devices: (0..<500).map(Fixture.token), since: Date().addingTimeInterval(-3600),
                            excluding: current, listLimit: listLimit))
                    let explain = PostgresQuery(unsafeSQL: "EXPLAIN " + probe.query.sql, binds: probe.query.binds)
                    var plan = ""
                    for try await line in try await store.client.query(explain, logger: TestDatabase.logger).decode(String.self) {
                        plan += line + "\n"
                    }
                    // The indexes of deliveries' partitions (the joined form also reads retractions_by_app).
                    let scanned = Set(plan.matches(of: indexScan).compactMap { $0.output[1].substring.map(String.init) })
                        .filter { $0.hasPrefix("deliveries") }
                    #expect(
                        !scanned.isEmpty && scanned.isSubset(of: deviceIndexes) && !plan.contains("Seq Scan on deliveries"),
                        "after \(statistics), list limit \(listLimit): \(scanned.sorted()) of \(plan)")
                }
            }
        }
    }

    /// Retractions by selector ride along as what they took from each
    /// device: a sender's, recipient's or campaign's references, a whole
    /// thread as its id, unless a message was sent in it since or the
    /// retraction had a start time, when the thread's references stand for it.
    @Test func selectorRetractionsRideAlongAsWhatTheyTookFromEachDevice() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let start = Date().addingTimeInterval(-600)
            func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }
            func message(_ reference: ReferenceID, _ tokens: [Int], at minute: Double?, _ labels: DeliveryLabels) -> [Delivery] {
                tokens.map {
                    Delivery(
                        appID: chat.id, reference: reference, token: Fixture.token($0), sentAt: minute.map(at) ?? Date(), labels: labels)
                }
            }
            try await store.record(
                message("t1-a", [0, 1], at: 0, DeliveryLabels(thread: "T1", sender: "S1"))
                    + message("t1-b", [0, 1], at: 1, DeliveryLabels(thread: "T1", sender: "S2"))
                    + message("t4-a", [0, 1], at: 0, DeliveryLabels(thread: "T4"))
                    + message("t2-a", [0, 1], at: 0, DeliveryLabels(thread: "T2"))
                    + message("t2-b", [0, 1], at: 2, DeliveryLabels(thread: "T2"))
                    + message("s3-a", [0], at: 0, DeliveryLabels(sender: "S3"))
                    + message("s3-b", [1], at: 0, DeliveryLabels(sender: "S3"))
                    + message("sale", [0, 1, 2], at: 0, DeliveryLabels(campaign: "spring"))
                    + message("dm", [2], at: 0, DeliveryLabels(recipient: "R1"))
                    + message("m9", [0, 1], at: 0, DeliveryLabels()))
            // Each a little later than the one before.
            func retract(_ selector: RetractionSelector? = nil, _ references: [ReferenceID] = [], dryRun: Bool = false) async throws -> UUID
            {
                try await Task.sleep(for: .milliseconds(20))
                return try await store.createRetraction(
                    RetractionRequest(
                        appID: chat.id, target: try RetractionTarget(references: references, selector: selector), requestedBy: "tests",
                        dryRun: dryRun)
                ).0.id
            }
            _ = try await retract(RetractionSelector(.campaign, "spring"))
            _ = try await retract(RetractionSelector(.recipient, "R1"))
            // T1 whole, but a message is sent in it later: its references ride along.
            _ = try await retract(RetractionSelector(.thread, "T1"))
            // T4 whole: its id rides along, on both phones.
            _ = try await retract(RetractionSelector(.thread, "T4"))
            // T2 from minute 1: only t2-b, as a reference.
            _ = try await retract(RetractionSelector(.thread, "T2", sentAfter: at(1)))
            _ = try await retract(RetractionSelector(.sender, "S3"))
            _ = try await retract(nil, ["m9"])
            _ = try await retract(RetractionSelector(.sender, "S1"), dryRun: true)
            // After T1's retraction, a new message in T1 reaches phone 1.
            try await store.record(message("t1-c", [1], at: nil, DeliveryLabels(thread: "T1")))
            let current = try await retract(nil, ["t1-c"])

            // The list passed to the read, and (more recent references than the limit) joined by PostgreSQL.
            for listLimit in [1_000, 1] {
                let found = try await store.recentRetractions(
                    appID: chat.id, devices: (0..<4).map(Fixture.token), since: start, excluding: current, listLimit: listLimit)
                #expect(
                    found == [
                        Fixture.token(0): [
                            .reference("m9"), .reference("s3-a"), .reference("t2-b"), .thread("T4"), .reference("t1-a"), .reference("t1-b"),
                            .reference("sale"),
                        ],
                        Fixture.token(1): [
                            .reference("m9"), .reference("s3-b"), .reference("t2-b"), .thread("T4"), .reference("t1-a"), .reference("t1-b"),
                            .reference("sale"),
                        ],
                        Fixture.token(2): [.reference("dm"), .reference("sale")],
                    ], "list limit \(listLimit)")
            }
        }
    }

    @Test func aRetractionCountsWhatRodeAlongAndWhatWasLeftOut() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: chat, reference: "m1", tokens: 0..<2))
            let (retraction, _) = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .references(["m1"]), requestedBy: "tests"))
            let item = try #require(try await store.claimWork(worker: "tests", limit: 1, lease: .seconds(60)).first)
            _ = try await store.finish([
                WorkResult(
                    item: item, counts: RetractionCounts(sent: 2),
                    pushes: PushesSent(total: 2, mostToOneDevice: 1, historyCarried: 30, historyLeftOut: 7))
            ])
            let account = try #require(try await store.retraction(id: retraction.id))
            #expect(account.pushes == PushesSent(total: 2, mostToOneDevice: 1, historyCarried: 30, historyLeftOut: 7))
        }
    }
}

extension [PayloadBuilder.Retracted] {
    /// References, as a device's history lists them.
    static func references(_ names: ReferenceID...) -> Self { names.map { .reference($0) } }
}
