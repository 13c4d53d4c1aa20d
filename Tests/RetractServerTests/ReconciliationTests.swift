import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// `GET /v1/devices/{token}/retractions`: what a device missed, paged by
/// cursor; and RetractKit's client for it feeding `RetractionHandler`.
@Suite("API reconciliation feed")
struct ReconciliationTests {
    /// Records `reference` for `tokens` and retracts it; returns the retraction's id.
    static func retract(_ references: [String], stage: APIStage, key: String, dryRun: Bool = false) async throws -> String {
        let list = references.map { "\"\($0)\"" }.joined(separator: ",")
        let made = try await stage.call(
            "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":[\#(list)],"dryRun":\#(dryRun)}"#)
        #expect(made.status == 202, "\(made)")
        return try #require(made.json?["id"] as? String)
    }

    static func record(_ reference: String, _ tokens: [DeviceToken], stage: APIStage, key: String) async throws {
        let answer = try await stage.call(
            "POST", "/v1/deliveries", key: key, body: #"{"app":"chat","reference":"\#(reference)","tokens":\#(APIStage.hex(tokens))}"#)
        #expect(answer.status == 201, "\(answer)")
    }

    @Test func aDevicePagesThroughWhatWasRetractedForItAndNothingElse() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let phone = TestTokens.token(1)
            let tablet = TestTokens.token(2)
            for reference in ["r1", "r2", "r3", "r4", "r5"] { try await Self.record(reference, [phone], stage: stage, key: key) }
            try await Self.record("r3", [tablet], stage: stage, key: key)
            try await Self.record("r6", [tablet], stage: stage, key: key)
            let first = try await Self.retract(["r1"], stage: stage, key: key)
            let second = try await Self.retract(["r2", "r6"], stage: stage, key: key)
            let third = try await Self.retract(["r3"], stage: stage, key: key)
            _ = try await Self.retract(["r4"], stage: stage, key: key, dryRun: true)
            let fourth = try await Self.retract(["r5"], stage: stage, key: key)
            // The feed lists a retraction once no older transaction is running (the workers' are short).
            _ = try await stage.http.poll("/v1/devices/\(phone.hex)/retractions", key: key) {
                ($0.json?["retractions"] as? [Any])?.count == 4
            }

            var pages: [[String: Any]] = []
            var cursor: String?
            repeat {
                let since = cursor.map { "&since=\($0)" } ?? ""
                let answer = try await stage.call("GET", "/v1/devices/\(phone.hex)/retractions?limit=2\(since)", key: key)
                #expect(answer.status == 200, "\(answer)")
                let page = try #require(answer.json)
                pages.append(page)
                cursor = page["cursor"] as? String
                if page["hasMore"] as? Bool != true { break }
            } while pages.count < 10
            let entries = pages.flatMap { ($0["retractions"] as? [[String: Any]]) ?? [] }
            #expect(pages.count == 2)
            #expect(entries.map { $0["id"] as? String } == [first, second, third, fourth])
            // Only the references this device received, and no dry run.
            #expect(entries.map { $0["references"] as? [String] } == [["r1"], ["r2"], ["r3"], ["r5"]])

            // Nothing new: an empty page that keeps the cursor; then a new retraction shows up.
            let caughtUp = try await stage.call("GET", "/v1/devices/\(phone.hex)/retractions?since=\(cursor ?? "")", key: key)
            #expect((caughtUp.json?["retractions"] as? [Any])?.isEmpty == true)
            #expect(caughtUp.json?["cursor"] as? String == cursor)
            let fifth = try await Self.retract(["r4"], stage: stage, key: key)
            let next = try await stage.http.poll("/v1/devices/\(phone.hex)/retractions?since=\(cursor ?? "")", key: key) {
                ($0.json?["retractions"] as? [Any])?.isEmpty == false
            }
            #expect(((next.json?["retractions"] as? [[String: Any]])?.map { $0["id"] as? String }) == [fifth])

            let forTablet = try await stage.call("GET", "/v1/devices/\(tablet.hex)/retractions", key: key)
            let tabletEntries = (forTablet.json?["retractions"] as? [[String: Any]]) ?? []
            #expect(tabletEntries.map { $0["id"] as? String } == [second, third])
            #expect(tabletEntries.map { $0["references"] as? [String] } == [["r6"], ["r3"]])
        }
    }

    @Test func retractKitsFeedRemovesWhatTheDeviceMissed() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let client = try await stage.key([.client], apps: [stage.chat], name: "ios-app")
            let phone = TestTokens.token(7)
            for reference in ["msg-1", "msg-2", "msg-3"] { try await Self.record(reference, [phone], stage: stage, key: key) }
            _ = try await Self.retract(["msg-1"], stage: stage, key: key)
            _ = try await Self.retract(["msg-2"], stage: stage, key: key)
            _ = try await stage.http.poll("/v1/devices/\(phone.hex)/retractions", key: key) {
                ($0.json?["retractions"] as? [Any])?.count == 2
            }
            let center = InMemoryNotificationCenter(delivered: [
                DeliveredNotification(identifier: "A", userInfo: ["notificationCustomData": ["pushNotificationReferenceId": "msg-1"]]),
                DeliveredNotification(identifier: "msg-2"),
                DeliveredNotification(identifier: "C", userInfo: ["notificationCustomData": ["pushNotificationReferenceId": "msg-3"]]),
            ])
            let handler = RetractionHandler(center: center)
            let feed = RetractionFeed(baseURL: stage.http.baseURL, apiKey: client)
            let caughtUp = try await feed.catchUp(token: phone, since: nil, handler: handler)
            #expect(caughtUp.outcome == .removed(["A", "msg-2"]))
            #expect(center.delivered.map(\.identifier) == ["C"])

            let again = try await feed.catchUp(token: phone, since: caughtUp.cursor, handler: handler)
            #expect(again.outcome == .noMatch)
            #expect(again.cursor == caughtUp.cursor)

            let refused = RetractionFeed(baseURL: stage.http.baseURL, apiKey: "rk_" + String(repeating: "x", count: 43))
            let error = await #expect(throws: RetractionFeed.FeedError.self) { try await refused.page(for: phone, since: nil) }
            #expect(error?.status == 401)
            #expect(error?.type == "https://retract.dev/problems/unauthorized")
        }
    }

    @Test func aKeyForSeveralAppsMustNameOne() async throws {
        try await APIStage.with { stage in
            let shop = try await stage.store.registerApp(stage.apns.registration(name: "shop"), actor: "test")
            let client = try await stage.key([.client], apps: [stage.chat, shop], name: "two-apps")
            let token = TestTokens.token(1).hex
            let unnamed = try await stage.call("GET", "/v1/devices/\(token)/retractions", key: client)
            #expect(unnamed.status == 422)
            #expect(unnamed.field == "app")
            #expect(try await stage.call("GET", "/v1/devices/\(token)/retractions?app=shop", key: client).status == 200)
        }
    }
}
