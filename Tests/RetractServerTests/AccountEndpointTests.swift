import APNsSimulator
import FCMSimulator
import Foundation
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

/// Several accounts of one app on one phone (self-hosted chat servers,
/// workspaces) that number their messages alike, through the API: a
/// retraction of one account's message 233 leaves the other account's 233,
/// on iPhones and Android phones, in the ledger and in the device feed.
@Suite("API with accounts")
struct AccountEndpointTests {
    /// Sends `reference` of `account` (nil: none) to `tokens` of `chat`, in conversation `general`.
    static func send(
        _ reference: String, account: String?, words: String, tokens: String, key: String, stage: APIStage, extra: String = ""
    ) async throws {
        let accountField = account.map { #","account":"\#($0)""# } ?? ""
        let sent = try await stage.call(
            "POST", "/v1/notifications", key: key,
            body:
                #"{"app":"\#(stage.chat.name)","reference":"\#(reference)","thread":"general","tokens":\#(tokens),"payload":{"aps":{"alert":{"body":"\#(words)"},"mutable-content":1}}\#(accountField)\#(extra)}"#
        )
        #expect(sent.status == 200, "\(sent)")
    }

    @Test func aRetractionOfOneAccountLeavesAnotherAccountsMessageOfTheSameNumberOnAnIPhone() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let phones = TestTokens.tokens(0..<2)
            let tokens = APIStage.hex(phones)
            try await Self.send("233", account: "acme.zulipchat.com", words: "acme's 233", tokens: tokens, key: key, stage: stage)
            try await Self.send("233", account: "globex.example", words: "globex's 233", tokens: tokens, key: key, stage: stage)
            try await Self.send("233", account: nil, words: "the only account's 233", tokens: tokens, key: key, stage: stage)
            // Each account's original has a collapse id of its own: none takes another's place.
            #expect(stage.apns.inbox(phones[0]).map(\.collapseID) == ["acme.zulipchat.com/233", "globex.example/233", "233"])
            // The ledger keeps three references.
            #expect(try await stage.count("SELECT count(DISTINCT reference) FROM deliveries") == 3)

            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","account":"acme.zulipchat.com","references":["233"]}"#)
            #expect(made.status == 202, "\(made)")
            #expect(made.json?["account"] as? String == "acme.zulipchat.com")
            let done = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            #expect(done["sent"] as? Int == phones.count, "\(done)")
            #expect(done["references"] as? [String] == ["233"])
            #expect(done["account"] as? String == "acme.zulipchat.com")

            for phone in phones {
                let inbox = stage.apns.inbox(phone)
                let push = try #require(inbox.last)
                #expect(RetractPayload.read(push.userInfo).account == "acme.zulipchat.com")
                for kind in [APNsSimulatedDevice.Phone(), .init(serviceExtension: .unfiltered)] {
                    let screen = await APNsSimulatedDevice.replay(inbox, on: kind)
                    #expect(screen.texts.values.sorted() == ["globex's 233", "the only account's 233"], "\(kind)")
                }
            }

            // The device feed says whose each retraction was, and lists one account's with ?account=. It
            // trails the ledger by the cluster's longest running transaction (another suite's): a phone asks again.
            let feed = try await stage.http.poll("/v1/devices/\(phones[0].hex)/retractions", key: key, timeout: .seconds(10)) {
                ($0.json?["retractions"] as? [Any])?.isEmpty == false
            }
            let entries = try #require(feed.json?["retractions"] as? [[String: Any]])
            #expect(entries.map { $0["account"] as? String } == ["acme.zulipchat.com"])
            #expect(entries.first?["references"] as? [String] == ["233"])
            let globex = try await stage.call("GET", "/v1/devices/\(phones[0].hex)/retractions?account=globex.example", key: key)
            #expect((globex.json?["retractions"] as? [Any])?.isEmpty == true, "\(globex)")
            #expect((globex.headers["etag"] ?? globex.headers["ETag"])?.split(separator: ".").count == 9)
            // RetractKit's feed removes it within its account on a phone that missed the push.
            let center = InMemoryNotificationCenter(delivered: [
                DeliveredNotification(identifier: "a", referenceID: "233", account: "acme.zulipchat.com"),
                DeliveredNotification(identifier: "b", referenceID: "233", account: "globex.example"),
                DeliveredNotification(identifier: "c", referenceID: "233"),
            ])
            let caughtUp = try await RetractionFeed(baseURL: stage.http.baseURL, apiKey: key).catchUp(
                token: phones[0], since: nil, handler: RetractionHandler(center: center))
            #expect(caughtUp.outcome == .removed(["a"]))
            #expect(center.delivered.map(\.identifier) == ["b", "c"])

            // A thread retraction of one account takes its conversation only.
            let thread = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","account":"globex.example","thread":"general"}"#)
            #expect(thread.status == 202, "\(thread)")
            _ = try await stage.waitUntilDone(try #require(thread.json?["id"] as? String), key: key)
            let screen = await APNsSimulatedDevice.replay(stage.apns.inbox(phones[1]), on: .init(serviceExtension: .unfiltered))
            #expect(screen.texts.values.sorted() == ["the only account's 233"])

            let refused = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"chat","account":"","references":["233"]}"#)
            #expect(refused.status == 422)
            #expect(refused.json?["field"] as? String == "account")
            let tooLong = try await stage.call(
                "POST", "/v1/deliveries", key: key,
                body: #"{"app":"chat","reference":"1","tokens":\#(tokens),"account":"\#(String(repeating: "a", count: 65))"}"#)
            #expect(tooLong.status == 422)
            #expect(tooLong.json?["field"] as? String == "account")
        }
    }

    /// A phone reading one account's feed, a page at a time, with the
    /// validator a page gives: other accounts' retractions before its own
    /// move its cursor past them (200 with none listed), never a 304 that
    /// would keep it before them for good.
    @Test func anAccountsFeedMovesPastOtherAccountsRetractions() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let phone = TestTokens.token(0)
            for (reference, account) in [("1", "globex"), ("2", "globex"), ("3", "acme")] {
                let recorded = try await stage.call(
                    "POST", "/v1/deliveries", key: key,
                    body: #"{"app":"chat","reference":"\#(reference)","account":"\#(account)","tokens":["\#(phone.hex)"]}"#)
                #expect(recorded.status == 201, "\(recorded)")
                let made = try await stage.call(
                    "POST", "/v1/retractions", key: key, body: #"{"app":"chat","account":"\#(account)","references":["\#(reference)"]}"#)
                _ = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            }
            var since: String?
            var validator: String?
            var listed: [String] = []
            var statuses: [Int] = []
            for _ in 0..<5 {
                let query = "account=acme&limit=1" + (since.map { "&since=\($0)" } ?? "")
                let page = try await stage.call(
                    "GET", "/v1/devices/\(phone.hex)/retractions?\(query)", key: key,
                    headers: validator.map { ["If-None-Match": $0] } ?? [:])
                statuses.append(page.status)
                guard page.status == 200 else { continue }
                let entries = page.json?["retractions"] as? [[String: Any]] ?? []
                listed += entries.flatMap { $0["references"] as? [String] ?? [] }
                since = page.json?["cursor"] as? String
                validator = entries.isEmpty ? page.header("ETag") : nil
            }
            #expect(listed == ["3"], "\(statuses)")
            // Once past every retraction, nothing new is a 304.
            #expect(statuses.last == 304, "\(statuses)")
        }
    }

    /// The same on Android phones, each app showing its originals one per
    /// message and one per conversation: RetractKit for Android, run as a
    /// process, leaves globex's 233 where acme's goes.
    @Test func aRetractionOfOneAccountLeavesAnotherAccountsMessageOfTheSameNumberOnAnAndroidPhone() async throws {
        let classes = try AndroidReplay.classes(root: FCMEndpointTests.packageRoot)
        try await FCMEndpointTests.withDroid { stage, fcm, key, devices in
            for (account, words) in [("acme", "acme's"), ("globex", "globex's")] {
                for (reference, display) in [("233", "app"), ("234", "app"), ("235", "firebase")] {
                    try await FCMEndpointTests.send(
                        reference, body: "\(words) \(reference)",
                        #","androidDisplay":"\#(display)","thread":"general","account":"\#(account)""#,
                        devices: devices, key: key, stage: stage)
                }
            }
            let made = try await stage.call(
                "POST", "/v1/retractions", key: key, body: #"{"app":"droid","account":"acme","references":["233","235"]}"#)
            #expect(made.status == 202, "\(made)")
            _ = try await stage.waitUntilDone(try #require(made.json?["id"] as? String), key: key)
            let phone = AndroidPhone()
            let handed = devices.map { ($0, phone.delivery(of: fcm.simulator.inbox(for: $0)).events) }
            for style in [AndroidReplay.Style.message, .conversation] {
                let screens = try AndroidReplay.phoneScreens(of: handed, style: style, classes: classes)
                for device in devices {
                    let showing = screens[device]?.showing ?? []
                    let words = showing.flatMap { shown in shown.messages?.map(\.text) ?? [shown.text ?? ""] }.sorted()
                    #expect(words == ["acme's 234", "globex's 233", "globex's 234", "globex's 235"], "\(style): \(showing)")
                }
            }
        }
    }
}
