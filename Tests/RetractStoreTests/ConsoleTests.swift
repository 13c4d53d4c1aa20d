import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// What the moderation console reads: notifications page by page, one
/// notification's devices, and the audit log page by page.
@Suite("Console")
struct ConsoleTests {
    /// Every page, following the cursors, each read with the cursor the
    /// previous one gave (nil for the first): the items in order, and how
    /// many pages there were.
    static func allPages<Item, Cursor>(
        limit: Int, _ read: (Cursor?) async throws -> (items: [Item], next: Cursor?)
    ) async throws -> (items: [Item], pages: Int) {
        var all: [Item] = []
        var cursor: Cursor?
        var pages = 0
        repeat {
            let page = try await read(cursor)
            pages += 1
            #expect(page.items.count <= limit)
            all += page.items
            cursor = page.next
        } while cursor != nil && pages < 100
        return (all, pages)
    }

    static func allNotifications(
        _ store: RetractStore, _ query: NotificationQuery
    ) async throws -> (
        items: [NotificationSummary], pages: Int
    ) {
        try await allPages(limit: query.limit) { (cursor: NotificationCursor?) in
            var query = query
            // The cursor travels as a string.
            query.cursor = try cursor.map { try NotificationCursor(encoded: $0.encoded) }
            let page = try await store.notificationPage(query)
            return (page.notifications, page.next)
        }
    }

    static func allAudit(_ store: RetractStore, _ query: AuditQuery) async throws -> (items: [AuditEntry], pages: Int) {
        try await allPages(limit: query.limit) { (cursor: AuditCursor?) in
            var query = query
            query.cursor = try cursor.map { try AuditCursor(encoded: $0.encoded) }
            let page = try await store.auditPage(query)
            return (page.entries, page.next)
        }
    }

    @Test func notificationsPageMostRecentFirstWithoutGapsOrRepeats() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let shop = try await Fixture.registerApp(store, name: "shop")
            let now = Date()
            // 13 references of chat, one minute apart; m-0 and m-1 (and shop's s-0) share their last send time.
            var deliveries: [Delivery] = []
            for message in 0..<13 {
                let at = now.addingTimeInterval(-60 * Double(max(message, 1)))
                deliveries += Fixture.deliveries(app: chat, reference: ReferenceID("m-\(message)"), tokens: 0..<(message + 1), at: at)
            }
            // m-3 sent later to one more device: its last send is the latest.
            deliveries += Fixture.deliveries(app: chat, reference: "m-3", tokens: [99], at: now.addingTimeInterval(-10))
            deliveries += Fixture.deliveries(app: shop, reference: "s-0", tokens: 0..<4, at: now.addingTimeInterval(-60))
            try await store.record(deliveries)

            let (all, pages) = try await Self.allNotifications(store, NotificationQuery(limit: 4))
            #expect(pages == 4)
            #expect(
                all.map { "\($0.appName)/\($0.reference)" }
                    == ["chat/m-3", "chat/m-0", "chat/m-1", "shop/s-0"] + [2, 4, 5, 6, 7, 8, 9, 10, 11, 12].map { "chat/m-\($0)" })
            let m3 = try #require(all.first)
            #expect(m3.devices == 5)
            #expect(abs(m3.lastSentAt.timeIntervalSince(now.addingTimeInterval(-10))) < 0.001)
            #expect(abs(m3.firstSentAt.timeIntervalSince(now.addingTimeInterval(-180))) < 0.001)
            #expect(all.last?.devices == 13)

            // One app's only; another app's reference is never listed.
            let (shops, _) = try await Self.allNotifications(store, NotificationQuery(appIDs: [shop.id], limit: 2))
            #expect(shops.map(\.reference) == ["s-0"])
            let (chats, _) = try await Self.allNotifications(store, NotificationQuery(appIDs: [chat.id], limit: 5))
            #expect(chats.count == 13 && chats.allSatisfy { $0.appID == chat.id })
            let byReference = try await store.notificationPage(NotificationQuery(appIDs: [shop.id], reference: "m-3", limit: 5))
            #expect(byReference.notifications.isEmpty && byReference.next == nil)

            // A range: the notifications last sent in it, each counted over all of its deliveries.
            let (recent, _) = try await Self.allNotifications(
                store, NotificationQuery(sentAfter: now.addingTimeInterval(-150), sentBefore: now.addingTimeInterval(-30), limit: 3))
            #expect(recent.map(\.reference) == ["m-0", "m-1", "s-0", "m-2"])
            let (late, _) = try await Self.allNotifications(store, NotificationQuery(sentAfter: now.addingTimeInterval(-30), limit: 3))
            #expect(late.map(\.reference) == ["m-3"])
            #expect(late.first?.devices == 5)
        }
    }

    @Test func theListReadsAsManyNotificationsAsAPageShowsWhateverTheLedgerHolds() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let shop = try await Fixture.registerApp(store, name: "shop")
            // 3,000 notifications of 20 devices each, written with SQL (COPY and any other writer keep the list too).
            let statements = [
                "SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date)",
                "SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date - 1)",
                """
                INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport, thread)
                SELECT \(chat.id), 'ref-' || r, decode(lpad(to_hex(d), 64, '0'), 'hex'),
                       ((now() - r * interval '10 ms') AT TIME ZONE 'UTC')::date, now() - r * interval '10 ms', 'apns',
                       CASE WHEN r % 100 = 0 THEN 'c-' || r END
                FROM generate_series(1, 3000) r, generate_series(1, 20) d
                """,
                "ANALYZE",
            ]
            for statement in statements { try await TestDatabase.execute(statement, on: store) }
            #expect(try await TestDatabase.value("SELECT count(*)::int FROM notifications", of: Int.self, on: store) == 3000)

            // A page, a thread's page, one past a cursor, and one of two apps: each reads the notifications it shows and one more.
            let first = try await store.notificationPage(NotificationQuery(limit: 50))
            #expect(first.notifications.map(\.reference) == (1...50).map { "ref-\($0)" })
            #expect(first.notifications.allSatisfy { $0.devices == 20 })
            let queries = [
                NotificationQuery(appIDs: [chat.id], limit: 50), NotificationQuery(appIDs: [chat.id], thread: "c-2000", limit: 50),
                NotificationQuery(appIDs: [chat.id], limit: 50, cursor: first.next),
                NotificationQuery(appIDs: [chat.id, shop.id], limit: 50),
                NotificationQuery(limit: 50),
            ]
            for query in queries {
                let sql = RetractStore.notificationPageQuery(query)
                let explain = PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, FORMAT JSON) " + sql.sql, binds: sql.binds)
                var json = ""
                for try await text in try await store.client.query(explain, logger: TestDatabase.logger).decode(String.self) {
                    json += text
                }
                let plan = try #require(
                    (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])?.first?["Plan"] as? [String: Any])
                let scans = Self.nodes(of: plan).filter { ($0["Relation Name"] as? String) == "notifications" }
                #expect(
                    !scans.isEmpty && scans.allSatisfy { ($0["Node Type"] as? String)?.hasPrefix("Index") == true }, "\(query): \(json)")
                // Per app: the page and the one row that says there is another.
                let read = scans.map { ($0["Actual Rows"] as? Int ?? 0) * ($0["Actual Loops"] as? Int ?? 1) }.reduce(0, +)
                #expect(read <= 51 * (query.appIDs?.count ?? 2), "\(query) read \(read) notifications: \(json)")
            }
        }
    }

    /// A plan's node and all the nodes under it.
    static func nodes(of plan: [String: Any]) -> [[String: Any]] {
        [plan] + ((plan["Plans"] as? [[String: Any]]) ?? []).flatMap(nodes(of:))
    }

    @Test func notificationsFilterByThreadAndCampaignAndCountDeadDevices() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let now = Date()
            var deliveries: [Delivery] = []
            for (reference, labels) in [
                ("t-1", DeliveryLabels(thread: "c-1")), ("t-2", DeliveryLabels(thread: "c-1")), ("t-3", DeliveryLabels(thread: "c-2")),
                ("k-1", DeliveryLabels(campaign: "spring")), ("plain", DeliveryLabels()),
            ] {
                deliveries += (0..<5).map {
                    Delivery(appID: chat.id, reference: ReferenceID(reference), token: Fixture.token($0), sentAt: now, labels: labels)
                }
            }
            try await store.record(deliveries)
            try await store.markDead(
                [1, 3].map { DeadToken(token: Fixture.token($0), since: now, reason: "Unregistered", learnedAt: now) }, appID: chat.id)

            let thread = try await store.notificationPage(NotificationQuery(thread: "c-1", limit: 10))
            #expect(thread.notifications.map(\.reference) == ["t-1", "t-2"])
            #expect(thread.notifications.allSatisfy { $0.thread == "c-1" && $0.campaign == nil })
            let campaign = try await store.notificationPage(NotificationQuery(campaign: "spring", limit: 10))
            #expect(campaign.notifications.map(\.reference) == ["k-1"])
            #expect(campaign.notifications.first?.campaign == "spring")
            let all = try await store.notificationPage(NotificationQuery(limit: 10))
            #expect(all.notifications.count == 5)
            #expect(all.notifications.allSatisfy { $0.devices == 5 && $0.deadDevices == 2 })
        }
    }

    @Test func notificationsListTheRetractionsThatTakeThem() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let now = Date()
            try await store.record(
                (0..<3).map {
                    Delivery(
                        appID: chat.id, reference: "m-1", token: Fixture.token($0), sentAt: now.addingTimeInterval(-5),
                        labels: DeliveryLabels(thread: "c-1"))
                } + Fixture.deliveries(app: chat, reference: "m-2", tokens: 0..<2, at: now.addingTimeInterval(-5)))
            let (byReference, _) = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .references(["m-1", "other"]), requestedBy: "ann", reason: "typo", dryRun: true))
            let (byThread, _) = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "bob"))
            // The same thread before m-1 was sent, and another thread, take nothing of it.
            _ = try await store.createRetraction(
                RetractionRequest(
                    appID: chat.id, target: .selector(RetractionSelector(.thread, "c-1", sentBefore: now.addingTimeInterval(-60))),
                    requestedBy: "bob"))
            _ = try await store.createRetraction(
                RetractionRequest(appID: chat.id, target: .selector(RetractionSelector(.thread, "c-9")), requestedBy: "bob"))

            let page = try await store.notificationPage(NotificationQuery(appIDs: [chat.id], limit: 10))
            let m1 = try #require(page.notifications.first { $0.reference == "m-1" })
            #expect(m1.retractions.map(\.id) == [byReference.id, byThread.id])
            let brief = try #require(m1.retractions.first)
            #expect(brief.dryRun && brief.requestedBy == "ann" && brief.reason == "typo" && brief.selector == nil && brief.state == .done)
            #expect(m1.retractions.last?.selector?.hasPrefix("thread \"c-1\"") == true)
            #expect(page.notifications.first { $0.reference == "m-2" }?.retractions.isEmpty == true)

            let detail = try #require(try await store.notificationDetail(appID: chat.id, reference: "m-1", deviceLimit: 2))
            #expect(detail.summary.devices == 3 && detail.summary.retractions.count == 2)
            #expect(detail.devices.map(\.token) == [0, 1].map(Fixture.token))
            #expect(try await store.notificationDetail(appID: chat.id, reference: "never", deviceLimit: 2) == nil)
        }
    }

    @Test func notificationDetailSaysWhichDevicesAreDead() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let other = try await Fixture.registerApp(store, name: "other")
            let now = Date()
            try await store.record(Fixture.deliveries(app: chat, reference: "m-1", tokens: 0..<4, at: now))
            try await store.markDead(
                [DeadToken(token: Fixture.token(2), since: now, reason: "Unregistered", learnedAt: now)], appID: chat.id)
            // Dead for another app only: alive here.
            try await store.markDead(
                [DeadToken(token: Fixture.token(1), since: now, reason: "Unregistered", learnedAt: now)], appID: other.id)
            let detail = try #require(try await store.notificationDetail(appID: chat.id, reference: "m-1", deviceLimit: 10))
            #expect(detail.devices.map { $0.dead?.reason } == [nil, nil, "Unregistered", nil])
            #expect(detail.summary.deadDevices == 1)
            #expect(try await store.notificationDetail(appID: other.id, reference: "m-1", deviceLimit: 10) == nil)
        }
    }

    @Test func badNotificationQueriesAreRefused() async throws {
        try await TestDatabase.withStore { store, _ in
            for query in [
                NotificationQuery(limit: 0), NotificationQuery(limit: 201), NotificationQuery(reference: ""),
                NotificationQuery(sentAfter: Date(), sentBefore: Date().addingTimeInterval(-1)), NotificationQuery(thread: ""),
            ] {
                await #expect(throws: StoreError.self) { _ = try await store.notificationPage(query) }
            }
        }
    }

    @Test func auditPagesNewestFirstAndKeepsAppsApart() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let shop = try await Fixture.registerApp(store, name: "shop")
            // 20 entries of chat, 10 of shop, 5 of no app; several share a time.
            let base = "2026-11-20 12:00:00+00"
            try await TestDatabase.execute(
                """
                INSERT INTO audit_log (at, actor, action, app_id, subject, details)
                SELECT timestamptz '\(base)' + (i / 3) * interval '1 second',
                       CASE WHEN i % 2 = 0 THEN 'api-key:moderator (8d1f4f2a-3a37-4a53-9d2b-7a4b0d3f6f10)' ELSE 'ops@host' END,
                       'retraction.created', CASE WHEN i < 20 THEN \(chat.id) WHEN i < 30 THEN \(shop.id) END, 'r-' || i,
                       jsonb_build_object('reason', 'reason ' || i)
                FROM generate_series(0, 34) AS i
                """, on: store)

            let (everything, pages) = try await Self.allAudit(
                store, AuditQuery(until: ISO8601DateFormatter().date(from: "2026-11-21T00:00:00Z"), limit: 4))
            #expect(pages == 9)
            #expect(everything.map(\.subject) == (0..<35).reversed().map { "r-\($0)" })
            #expect(everything.first?.appName == nil && everything[10].appName == "shop" && everything.last?.appName == "chat")
            #expect(everything.last?.keyName == "moderator" && everything.last?.reason == "reason 0")
            #expect(everything[1].keyName == nil)

            // Apps given: theirs only, never the entries of no app.
            let (shops, _) = try await Self.allAudit(store, AuditQuery(appIDs: [shop.id], limit: 3))
            #expect(shops.map(\.subject) == ["shop"] + (20..<30).reversed().map { "r-\($0)" })
            let (both, _) = try await Self.allAudit(store, AuditQuery(appIDs: [shop.id, chat.id], limit: 7))
            #expect(both.count == 30 + 2)  // the two app.registered entries
            #expect(both.allSatisfy { $0.appID != nil })

            // A range: [since, until).
            let start = try #require(ISO8601DateFormatter().date(from: "2026-11-20T12:00:02Z"))
            let (range, _) = try await Self.allAudit(
                store, AuditQuery(since: start, until: start.addingTimeInterval(2), action: "retraction.created", limit: 2))
            #expect(range.map(\.subject) == (6..<12).reversed().map { "r-\($0)" })
            let registered = try await store.auditPage(AuditQuery(action: "app.registered", limit: 10))
            #expect(registered.entries.map(\.subject) == ["shop", "chat"] && registered.next == nil)
            // The older form reads the same log.
            #expect(try await store.auditLog(appID: shop.id, limit: 2).map(\.subject) == ["shop", "r-29"])
        }
    }

    @Test func badAuditQueriesAndCursorsAreRefused() async throws {
        try await TestDatabase.withStore { store, _ in
            for query in [
                AuditQuery(limit: 0), AuditQuery(limit: 501), AuditQuery(since: Date(), until: Date().addingTimeInterval(-5)),
                AuditQuery(action: ""),
            ] {
                await #expect(throws: StoreError.self) { _ = try await store.auditPage(query) }
            }
        }
    }

    @Test func cursorsComeBackAsTheyWentAndOthersAreRefused() throws {
        let cursor = AuditCursor(microseconds: 1_764_000_000_123_456, id: 42)
        #expect(try AuditCursor(encoded: cursor.encoded) == cursor)
        let notification = NotificationCursor(microseconds: 5, reference: "a.b.c", appID: 3)
        #expect(try NotificationCursor(encoded: notification.encoded) == notification)
        for bad in [
            "", "%%%", Data("a1.12.x".utf8).base64URLEncodedString(), Data("v1.1.2".utf8).base64URLEncodedString(), notification.encoded,
        ] {
            #expect {
                _ = try AuditCursor(encoded: bad)
            } throws: { error in
                (error as? StoreError)?.code == .invalidInput && (error as? StoreError)?.message.hasPrefix("cursor:") == true
            }
        }
        for bad in [
            "", "not a cursor", Data("n1.x.1.r".utf8).base64URLEncodedString(), Data("n1.1.1.".utf8).base64URLEncodedString(),
            cursor.encoded,
        ] {
            #expect {
                _ = try NotificationCursor(encoded: bad)
            } throws: { error in
                (error as? StoreError)?.code == .invalidInput && (error as? StoreError)?.message.hasPrefix("cursor:") == true
            }
        }
    }

    @Test func keyNameIsReadFromAnAPIKeysActorOnly() {
        #expect(AuditEntry(actor: "api-key:mod (x) (8d1f4f2a-3a37-4a53-9d2b-7a4b0d3f6f10)", action: "a").keyName == "mod (x)")
        #expect(AuditEntry(actor: AuditEntry.apiKeyActor(name: "chat-backend", id: UUID()), action: "a").keyName == "chat-backend")
        #expect(AuditEntry(actor: "retract:late-delivery", action: "a").keyName == nil)
        #expect(AuditEntry(actor: "api-key:mod (not-a-uuid)", action: "a").keyName == nil)
    }
}
