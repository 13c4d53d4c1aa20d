import Foundation
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// `GET /v1/notifications` and `GET /v1/audit`: what the moderation
/// console reads, page by page, for the apps the key may touch.
@Suite("API console reads")
struct ConsoleEndpointTests {
    /// Every page of `path` (which has a query already), following `next`.
    static func pages(_ path: String, key: String, stage: APIStage, list: String) async throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var next: String?
        var calls = 0
        repeat {
            let answer = try await stage.call("GET", path + (next.map { "&cursor=\($0)" } ?? ""), key: key)
            #expect(answer.status == 200, "\(answer)")
            let page = try #require(answer.json)
            items += (page[list] as? [[String: Any]]) ?? []
            next = page["next"] as? String
            calls += 1
        } while next != nil && calls < 50
        return items
    }

    @Test func notificationsPageThroughTheKeysAppsOnly() async throws {
        try await APIStage.with { stage in
            let shop = try await stage.store.registerApp(stage.apns.registration(name: "shop"), actor: "test")
            let now = Date()
            var deliveries: [Delivery] = []
            for message in 0..<7 {
                deliveries += (0...message).map {
                    Delivery(
                        appID: stage.chat.id, reference: ReferenceID("m-\(message)"), token: TestTokens.token($0),
                        sentAt: now.addingTimeInterval(-Double(message) * 60), labels: DeliveryLabels(thread: message < 2 ? "c-1" : nil))
                }
            }
            deliveries.append(Delivery(appID: shop.id, reference: "s-1", token: TestTokens.token(1), sentAt: now))
            try await stage.store.record(deliveries)
            let chatKey = try await stage.chatKey()
            let made = try await stage.call(
                "POST", "/v1/retractions", key: chatKey, body: #"{"app":"chat","references":["m-1"],"reason":"spam","dryRun":true}"#)
            #expect(made.status == 202, "\(made)")

            let listed = try await Self.pages("/v1/notifications?limit=3", key: chatKey, stage: stage, list: "notifications")
            #expect(listed.map { $0["reference"] as? String } == (0..<7).map { "m-\($0)" })
            #expect(listed.allSatisfy { $0["app"] as? String == "chat" })
            #expect(listed.map { $0["devices"] as? Int } == (1...7).map { $0 })
            let m1 = listed[1]
            let retractions = try #require(m1["retractions"] as? [[String: Any]])
            #expect(retractions.count == 1 && retractions.first?["reason"] as? String == "spam")
            #expect((retractions.first?["requestedBy"] as? String)?.hasPrefix("api-key:chat-backend (") == true)
            #expect((m1["lastSentAt"] as? String)?.hasSuffix("Z") == true)

            // Filters, through the query.
            let thread = try await stage.call("GET", "/v1/notifications?thread=c-1", key: chatKey)
            #expect((thread.json?["notifications"] as? [[String: Any]])?.map { $0["reference"] as? String } == ["m-0", "m-1"])
            #expect(thread.json?["next"] == nil)
            let after = ISO8601DateFormatter().string(from: now.addingTimeInterval(-150))
            let recent = try await stage.call("GET", "/v1/notifications?app=chat&sentAfter=\(after)", key: chatKey)
            #expect((recent.json?["notifications"] as? [[String: Any]])?.count == 3)
            let one = try await stage.call("GET", "/v1/notifications?reference=m-4", key: chatKey)
            #expect((one.json?["notifications"] as? [[String: Any]])?.first?["devices"] as? Int == 5)

            // Another app's key sees its own; an app the key may not touch is 404, as if it did not exist.
            let shopKey = try await stage.key([.read], apps: [shop], name: "shop-console")
            let shops = try await stage.call("GET", "/v1/notifications", key: shopKey)
            #expect((shops.json?["notifications"] as? [[String: Any]])?.map { $0["reference"] as? String } == ["s-1"])
            let foreign = try await stage.call("GET", "/v1/notifications?app=chat", key: shopKey)
            #expect(foreign.status == 404 && foreign.json?["field"] as? String == "app", "\(foreign)")
            // An admin key for every app sees both.
            let admin = try await stage.key([.admin], apps: [], name: "root")
            let everything = try await Self.pages("/v1/notifications?limit=5", key: admin, stage: stage, list: "notifications")
            #expect(everything.count == 8)
        }
    }

    @Test func theAuditLogPagesNewestFirstForTheKeysApps() async throws {
        try await APIStage.with { stage in
            let shop = try await stage.store.registerApp(stage.apns.registration(name: "shop"), actor: "test")
            let chatKey = try await stage.chatKey()
            try await stage.store.record([Delivery(appID: stage.chat.id, reference: "m-1", token: TestTokens.token(1), sentAt: Date())])
            for reason in ["first", "second", "third"] {
                let made = try await stage.call(
                    "POST", "/v1/retractions", key: chatKey,
                    body: #"{"app":"chat","references":["m-1"],"reason":"\#(reason)","dryRun":true}"#)
                #expect(made.status == 202, "\(made)")
            }
            // A key made for every app writes an entry of no app.
            let admin = try await stage.key([.admin], apps: [], name: "root")

            let chats = try await Self.pages("/v1/audit?limit=2", key: chatKey, stage: stage, list: "entries")
            #expect(
                chats.map { $0["action"] as? String } == [
                    "retraction.created", "retraction.created", "retraction.created", "app.registered",
                ])
            #expect(chats.prefix(3).map { $0["reason"] as? String } == ["third", "second", "first"])
            #expect(chats.first?["keyName"] as? String == "chat-backend" && chats.first?["app"] as? String == "chat")
            #expect(chats.last?["keyName"] == nil)
            #expect(chats.allSatisfy { $0["app"] as? String == "chat" })

            let all = try await Self.pages("/v1/audit?limit=3", key: admin, stage: stage, list: "entries")
            #expect(all.contains { $0["action"] as? String == "key.created" && $0["app"] == nil })
            #expect(all.contains { $0["app"] as? String == "shop" })
            let shopsOnly = try await stage.call("GET", "/v1/audit?app=shop", key: admin)
            #expect((shopsOnly.json?["entries"] as? [[String: Any]])?.map { $0["subject"] as? String } == ["shop"])
            let retractions = try await stage.call("GET", "/v1/audit?action=retraction.created&limit=1", key: admin)
            #expect((retractions.json?["entries"] as? [[String: Any]])?.first?["reason"] as? String == "third")
            #expect(retractions.json?["next"] is String)
            let future = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3600))
            let none = try await stage.call("GET", "/v1/audit?since=\(future)", key: admin)
            #expect((none.json?["entries"] as? [[String: Any]])?.isEmpty == true)
            let foreign = try await stage.call("GET", "/v1/audit?app=shop", key: chatKey)
            #expect(foreign.status == 404, "\(foreign)")
            _ = shop
        }
    }

    @Test func readingNeedsTheReadScopeAndGoodParameters() async throws {
        try await APIStage.with { stage in
            let recorder = try await stage.key([.record, .retract], apps: [stage.chat], name: "backend")
            for path in ["/v1/notifications", "/v1/audit"] {
                let refused = try await stage.call("GET", path, key: recorder)
                #expect(refused.status == 403, "\(refused)")
                #expect(refused.text.contains("read scope"))
                #expect(try await stage.call("GET", path).status == 401)
            }
            let key = try await stage.chatKey()
            for (path, field) in [
                ("/v1/notifications?limit=0", "limit"), ("/v1/notifications?limit=201", "limit"), ("/v1/notifications?limit=x", "limit"),
                ("/v1/notifications?cursor=nope", "cursor"), ("/v1/notifications?sentAfter=yesterday", "sentAfter"),
                ("/v1/notifications?sentBefore=2026-13-01T00:00:00Z", "sentBefore"),
                ("/v1/notifications?sentAfter=2026-11-02T00:00:00Z&sentBefore=2026-11-01T00:00:00Z", "sentAfter"),
                ("/v1/notifications?thread=", "thread"), ("/v1/notifications?reference=", "reference"),
                ("/v1/audit?limit=501", "limit"), ("/v1/audit?since=soon", "since"), ("/v1/audit?until=1", "until"),
                ("/v1/audit?cursor=\(NotificationCursor(microseconds: 1, reference: "r", appID: 1).encoded)", "cursor"),
                ("/v1/audit?since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", "since"),
            ] {
                let answer = try await stage.call("GET", path, key: key)
                #expect(answer.status == 422, "\(path): \(answer)")
                #expect(answer.json?["field"] as? String == field, "\(path): \(answer)")
                #expect((answer.json?["type"] as? String)?.hasSuffix("/invalid-field") == true)
            }
        }
    }
}
