import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@Suite("Deliveries")
struct DeliveryTests {
    @Test func bulkRecordingIsOneStatementAndRecordingAgainIsHarmless() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let batch = Fixture.deliveries(app: app, reference: "msg-1", tokens: 0..<10_000)
            #expect(try await store.record(batch) == 10_000)
            #expect(try await store.record(batch) == 0)
            // Repeats inside one batch, too.
            #expect(try await store.record(Array(batch.prefix(3)) + Array(batch.prefix(3))) == 0)
            #expect(try await Fixture.scalar(store, "SELECT count(*) FROM deliveries", as: Int.self) == 10_000)
            #expect(try await store.countDevices(appID: app.id, references: ["msg-1"]) == 10_000)
        }
    }

    @Test func streamsAHundredThousandDevicesInBoundedPages() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            for start in stride(from: 0, to: 100_000, by: 10_000) {
                try await store.record(Fixture.deliveries(app: app, reference: "broadcast", tokens: start..<start + 10_000))
            }
            // Another reference and another app must not leak in.
            try await store.record(Fixture.deliveries(app: app, reference: "other", tokens: 100_000..<100_010))
            let otherApp = try await Fixture.registerApp(store, name: "other-app")
            try await store.record(Fixture.deliveries(app: otherApp, reference: "broadcast", tokens: 200_000..<200_010))

            var seen = 0
            var previous: DeviceToken?
            var largestPage = 0
            for try await page in store.devices(appID: app.id, references: ["broadcast"], pageSize: 1000) {
                largestPage = max(largestPage, page.devices.count)
                for device in page.devices {
                    #expect(device.token == Fixture.token(seen), "devices come in token order, each once")
                    #expect(device.references == ["broadcast"])
                    if let previous { #expect(previous < device.token) }
                    previous = device.token
                    seen += 1
                }
            }
            #expect(seen == 100_000)
            #expect(largestPage == 1000)
        }
    }

    /// A page of a broadcast reads the page, not the rest of the broadcast.
    /// On this ledger (2,000 chat messages of 100 devices each, then two
    /// broadcasts of 20,000 devices whose tokens alternate, all after the
    /// messages' tokens, analyzed, three day partitions as a running server
    /// keeps), PostgreSQL planning the page's statement as it was before
    /// migration 0022 expects a few rows of the broadcast past its middle and
    /// sorts all 10,000 left; `retract_device_page` reads the page's 500
    /// through the primary key (a read in token order through another index
    /// would take the other broadcast's entries too).
    @Test func aPageInTheMiddleOfABroadcastReadsThePageAlone() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let today = "(now() AT TIME ZONE 'UTC')::date"
            for statement in [
                "SELECT retract_ensure_delivery_partition(\(today) + d) FROM generate_series(-1, 1) d",
                """
                INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
                SELECT \(app.id), 'm' || r, decode(lpad(to_hex(1 + (r * 100 + k) % 20000), 64, '0'), 'hex'), \(today), now(), 'apns'
                FROM generate_series(1, 2000) r, generate_series(1, 100) k
                """,
                // "broadcast" to 1,000,001, 1,000,003 … 1,039,999; "other" to the even tokens between.
                """
                INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
                SELECT \(app.id), CASE WHEN d % 2 = 1 THEN 'broadcast' ELSE 'other' END,
                       decode(lpad(to_hex(d), 64, '0'), 'hex'), \(today), now(), 'apns'
                FROM generate_series(1000001, 1040000) d
                """,
                "ANALYZE deliveries",
            ] {
                try await TestDatabase.execute(statement, on: store)
            }
            let middle = Fixture.token(1_020_000)

            // What a read took from deliveries' partitions (index entries, and
            // rows of sequential scans): this connection's count after it, less
            // before it, in one transaction (nothing is flushed within one).
            func taken(_ query: PostgresQuery) async throws -> Int {
                try await store.client.withTransaction(logger: TestDatabase.logger) { connection in
                    func count() async throws -> Int {
                        let count = try await connection.query(
                            """
                            SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(oid)), 0)::int8 FROM pg_class
                            WHERE relkind IN ('i', 'r') AND relname LIKE 'deliveries_%'
                            """, logger: TestDatabase.logger
                        ).decode(Int.self)
                        for try await taken in count { return taken }
                        return 0
                    }
                    let before = try await count()
                    _ = try await connection.query(query, logger: TestDatabase.logger).collect()
                    return try await count() - before
                }
            }
            // The statement devicePage ran before migration 0022, as it was.
            let lower = ByteBuffer(bytes: middle.bytes)
            let upper = ByteBuffer(bytes: [UInt8](repeating: 0xFF, count: Delivery.maximumTokenLength + 1))
            let before: PostgresQuery = """
                SELECT d.reference, d.token, d.transport = 'fcm', d.sent_at,
                       (SELECT dt.recorded_at FROM dead_tokens dt WHERE dt.app_id = \(app.id) AND dt.token = d.token), d.collapse_id
                FROM unnest(\(["broadcast"])::text[]) AS r (ref)
                CROSS JOIN LATERAL (
                    SELECT reference, token, transport, sent_at, collapse_id FROM deliveries
                    WHERE app_id = \(app.id) AND reference = r.ref AND token > \(lower) AND token <= \(upper)
                    ORDER BY token
                    LIMIT \(500)
                ) d
                """
            let beforeTook = try await taken(before)
            #expect(beforeTook >= 10_000, "the ledger no longer leads PostgreSQL astray (\(beforeTook)): the test shows nothing")
            let pageTook = try await taken(store.devicePageQuery(appID: app.id, references: ["broadcast"], after: middle, limit: 500))
            #expect((500...501).contains(pageTook), "the page took \(pageTook)")

            let page = try await store.devicePage(appID: app.id, references: ["broadcast"], after: middle, limit: 500)
            #expect(page.devices.map(\.token) == stride(from: 1_020_001, through: 1_020_999, by: 2).map(Fixture.token))
        }
    }

    @Test func aDeviceOfSeveralReferencesComesOnceWithAllOfThem() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: "a", tokens: [1, 2, 3]))
            try await store.record(Fixture.deliveries(app: app, reference: "b", tokens: [2, 3, 4]))
            // The same device and reference a day earlier: still one device.
            try await store.record(Fixture.deliveries(app: app, reference: "a", tokens: [2], at: Date().addingTimeInterval(-86_400)))
            var devices: [DeviceReferences] = []
            // Pages of 2 cross the point where the references overlap.
            for try await page in store.devices(appID: app.id, references: ["a", "b", "not-sent"], pageSize: 2) {
                devices += page.devices
            }
            #expect(
                devices == [
                    DeviceReferences(token: Fixture.token(1), references: ["a"]),
                    DeviceReferences(token: Fixture.token(2), references: ["a", "b"]),
                    DeviceReferences(token: Fixture.token(3), references: ["a", "b"]),
                    DeviceReferences(token: Fixture.token(4), references: ["b"]),
                ])
        }
    }

    /// A newer notification under the same collapse id took the original's
    /// place on a device, unless it is itself being retracted or the original
    /// was sent again after it; other devices, collapse ids and apps do not count.
    @Test func findsOriginalsANewerNotificationReplacedUnderTheSameCollapseID() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let other = try await Fixture.registerApp(store, name: "other-app")
            let now = Date()
            func delivery(_ reference: ReferenceID, _ token: Int, _ collapseID: String?, minutesAgo: Double, app: App? = nil) -> Delivery {
                Delivery(
                    appID: (app ?? other).id, reference: reference, token: Fixture.token(token),
                    sentAt: now.addingTimeInterval(-minutesAgo * 60), collapseID: collapseID)
            }
            try await store.record([
                // Every device got m1 under chat-42 an hour ago.
                delivery("m1", 1, "chat-42", minutesAgo: 60, app: app), delivery("m1", 2, "chat-42", minutesAgo: 60, app: app),
                delivery("m1", 3, "chat-42", minutesAgo: 60, app: app), delivery("m1", 4, "chat-42", minutesAgo: 60, app: app),
                delivery("m1", 5, "chat-42", minutesAgo: 60, app: app),
                // 1: m2 replaced it. 2: m2 under another collapse id. 3: m2 came first.
                delivery("m2", 1, "chat-42", minutesAgo: 30, app: app), delivery("m2", 2, "chat-7", minutesAgo: 30, app: app),
                delivery("m2", 3, "chat-42", minutesAgo: 90, app: app),
                // 4: m3 replaced it, but m3 is retracted too. 5: only another app's delivery is newer.
                delivery("m3", 4, "chat-42", minutesAgo: 30, app: app), delivery("m9", 5, "chat-42", minutesAgo: 1),
            ])
            // 6: m1 two days ago, m2 in its place, then m1 sent again (another day), in m2's place.
            try await store.record([
                delivery("m1", 6, "chat-42", minutesAgo: 48 * 60, app: app), delivery("m2", 6, "chat-42", minutesAgo: 120, app: app),
                delivery("m1", 6, "chat-42", minutesAgo: 60, app: app),
            ])
            let devices = (1...6).map { DeviceReferences(token: Fixture.token($0), references: ["m1"], collapseIDs: ["m1": "chat-42"]) }
            let found = try await store.supersededReferences(appID: app.id, devices: devices, retracted: ["m1", "m3"])
            #expect(found == [Fixture.token(1): ["m1"]])
            // Retracting m1 alone, device 4 shows m3 now.
            let alone = try await store.supersededReferences(appID: app.id, devices: devices, retracted: ["m1"])
            #expect(alone == [Fixture.token(1): ["m1"], Fixture.token(4): ["m1"]])
            // Without collapse ids, nothing is asked.
            #expect(
                try await store.supersededReferences(
                    appID: app.id, devices: [DeviceReferences(token: Fixture.token(1), references: ["m1"])], retracted: ["m1"]
                ).isEmpty)
        }
    }

    /// Labels are kept where given and NULL where not, in one statement;
    /// a label unfit to keep is refused by name, and nothing of the batch is written.
    @Test func labelsAreKeptWhereGiven() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let labelled = DeliveryLabels(thread: "c-1", sender: "ann", campaign: "spring")
            try await store.record([
                Delivery(appID: app.id, reference: "m1", token: Fixture.token(1), sentAt: Date(), labels: labelled),
                Delivery(appID: app.id, reference: "m1", token: Fixture.token(2), sentAt: Date(), labels: DeliveryLabels(recipient: "bob")),
                Delivery(appID: app.id, reference: "m2", token: Fixture.token(1), sentAt: Date()),
            ])
            let rows = try await store.client.query(
                """
                SELECT reference || '/' || get_byte(token, 31) || ':' || coalesce(thread, '-') || ',' || coalesce(sender, '-') || ','
                       || coalesce(recipient, '-') || ',' || coalesce(campaign, '-')
                FROM deliveries ORDER BY 1
                """, logger: TestDatabase.logger
            ).collect().map { try $0.decode(String.self) }
            #expect(rows == ["m1/1:c-1,ann,-,spring", "m1/2:-,-,bob,-", "m2/1:-,-,-,-"])

            for (labels, message) in [
                (DeliveryLabels(thread: ""), "deliveries[1].thread: must not be empty"),
                (DeliveryLabels(sender: String(repeating: "s", count: 257)), "deliveries[1].sender: 257 bytes; at most 256"),
                (DeliveryLabels(campaign: "a\nb"), "deliveries[1].campaign: cannot hold control characters"),
            ] {
                await #expect {
                    try await store.record([
                        Delivery(appID: app.id, reference: "m3", token: Fixture.token(1), sentAt: Date()),
                        Delivery(appID: app.id, reference: "m3", token: Fixture.token(2), sentAt: Date(), labels: labels),
                    ])
                } throws: { error in
                    (error as? StoreError)?.code == .invalidInput && "\(error)".contains(message)
                }
            }
            #expect(try await store.recordedReferences(appID: app.id, among: ["m3"]).isEmpty)
        }
    }

    @Test func deadTokensAreSkippedAndCounted() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 0..<10))
            let early = Date(timeIntervalSince1970: 1_700_000_000)
            let learned = Date()
            try await store.markDead(
                [
                    DeadToken(token: Fixture.token(3), since: early.addingTimeInterval(60), reason: "Unregistered", learnedAt: learned),
                    DeadToken(token: Fixture.token(7), since: early, reason: "Unregistered", learnedAt: learned),
                ], appID: app.id)
            // Found dead again later (it came back and died again): the later death is kept; an older report changes nothing.
            try await store.markDead(
                [DeadToken(token: Fixture.token(7), since: early.addingTimeInterval(3600), reason: "ExpiredToken", learnedAt: learned + 1)],
                appID: app.id)
            try await store.markDead(
                [DeadToken(token: Fixture.token(3), since: early, reason: "Unregistered", learnedAt: learned - 1)], appID: app.id)

            let page = try await store.devicePage(appID: app.id, references: ["msg"], limit: 100)
            #expect(page.devices.map(\.token) == [0, 1, 2, 4, 5, 6, 8, 9].map(Fixture.token))
            #expect(page.skipped == [3, 7].map(Fixture.token))
            #expect(page.last == Fixture.token(9))
            // Every device counts in a retraction's total; the dead ones are counted as skipped.
            #expect(try await store.countDevices(appID: app.id, references: ["msg"]) == 10)
            let seven = try #require(try await store.deadToken(Fixture.token(7), appID: app.id))
            #expect((seven.since, seven.reason) == (early.addingTimeInterval(3600), "ExpiredToken"))
            #expect(abs(seven.learnedAt.timeIntervalSince(learned + 1)) < 0.001)
            #expect(try await store.deadToken(Fixture.token(3), appID: app.id)?.since == early.addingTimeInterval(60))
            #expect(try await store.deadToken(Fixture.token(4), appID: app.id) == nil)

            // A newer delivery to a dead token (the app registered it again) brings it back, for that delivery.
            try await store.record([
                Delivery(appID: app.id, reference: "next", token: Fixture.token(3), sentAt: Date().addingTimeInterval(5))
            ])
            let after = try await store.devicePage(appID: app.id, references: ["msg", "next"], limit: 100)
            #expect(after.devices.map(\.token) == [0, 1, 2, 3, 4, 5, 6, 8, 9].map(Fixture.token))
            #expect(after.devices[3] == DeviceReferences(token: Fixture.token(3), references: ["next"]))
            #expect(after.skipped == [Fixture.token(7)])
        }
    }

    @Test func aPageOfOnlyDeadTokensStillMovesTheCursor() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 0..<6))
            try await store.markDead(
                (0..<3).map { DeadToken(token: Fixture.token($0), since: Date(), reason: "Unregistered") }, appID: app.id)
            var pages: [DevicePage] = []
            for try await page in store.devices(appID: app.id, references: ["msg"], pageSize: 3) { pages.append(page) }
            #expect(pages.first?.devices.isEmpty == true)
            #expect(pages.first?.deadSkipped == 3)
            #expect(pages.flatMap(\.devices).map(\.token) == [3, 4, 5].map(Fixture.token))
        }
    }

    @Test(
        arguments: [
            "'; DROP TABLE deliveries; --",
            "msg' OR '1'='1",
            "%", "_", "\\", "$1", "\"quoted\"", "emoji-🙂", "Ünïcødé", "a\u{0301}",
        ] as [ReferenceID])
    func injectionShapedReferencesAreStoredAndFoundLiterally(reference: ReferenceID) async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: reference, tokens: [1]))
            try await store.record(Fixture.deliveries(app: app, reference: "unrelated", tokens: [2]))
            let page = try await store.devicePage(appID: app.id, references: [reference])
            #expect(page.devices == [DeviceReferences(token: Fixture.token(1), references: [reference])])
            #expect(try await Fixture.scalar(store, "SELECT count(*) FROM deliveries", as: Int.self) == 2)
        }
    }

    @Test func badDeliveriesAreRefusedNamingTheRowAndNothingIsWritten() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let good = Fixture.deliveries(app: app, reference: "ok", tokens: [1])[0]
            var cases: [(Delivery, String)] = []
            // A reference is checked where it comes in from outside (ReferenceID(validating:)), not here again.
            var emptyToken = good
            emptyToken.token = DeviceToken(bytes: [])
            cases.append((emptyToken, "deliveries[1].token: 0 bytes"))
            var old = good
            old.sentAt = Date().addingTimeInterval(-31 * 86_400)
            cases.append((old, "deliveries[1].sentAt"))
            var future = good
            future.sentAt = Date().addingTimeInterval(2 * 86_400)
            cases.append((future, "more than a day in the future"))
            for (bad, message) in cases {
                let error = await #expect(throws: StoreError.self) { try await store.record([good, bad]) }
                #expect(error?.code == .invalidInput)
                #expect(error?.message.contains(message) == true, "\(error?.message ?? "") should say \(message)")
            }
            var unknownApp = good
            unknownApp.appID = 424_242
            let error = await #expect(throws: StoreError.self) { try await store.record([good, unknownApp]) }
            #expect(error?.code == .notFound)
            #expect(error?.message == "app 424242 does not exist")
            #expect(try await Fixture.scalar(store, "SELECT count(*) FROM deliveries", as: Int.self) == 0)
        }
    }

    @Test func appsAreRegisteredOnceAndReadBack() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store, name: "shop", dialect: .legacy)
            #expect(try await store.app(named: "shop") == app)
            #expect(try await store.app(id: app.id) == app)
            #expect(app.authentication == .token(keyID: "KEY1234567", teamID: "TEAM123456", keyPath: "/keys/AuthKey.p8"))
            #expect(app.dialect == .legacy)
            let duplicate = await #expect(throws: StoreError.self) { try await Fixture.registerApp(store, name: "shop") }
            #expect(duplicate?.code == .uniqueViolation)
            let invalid = await #expect(throws: StoreError.self) {
                try await store.registerApp(
                    AppRegistration(
                        name: "Shop!", topic: "com.example.shop", environment: .production, authentication: .certificate(path: "/c.p12")),
                    actor: "tests")
            }
            #expect(invalid?.code == .invalidInput)
            #expect(invalid?.message.hasPrefix("app: name: \"Shop!\"") == true)
            #expect(try await store.apps().map(\.name) == ["shop"])
            #expect(try await store.auditLog(appID: app.id).map(\.action) == ["app.registered"])
        }
    }

    @Test func anUnreachableDatabaseIsAConnectionError() async throws {
        // Port 9 (discard) on loopback: nothing listens there.
        let url = try DatabaseURL("postgres://postgres@127.0.0.1:9/postgres?sslmode=disable")
        let error = await #expect(throws: StoreError.self) {
            try await RetractStore.withStore(url: url, logger: TestDatabase.logger) { store in try await store.ping() }
        }
        #expect(error?.code == .connectionLost, "\(error?.message ?? "")")
        #expect(error?.message.contains("cannot connect to the database at postgres://postgres@127.0.0.1:9/postgres") == true)
    }
}
