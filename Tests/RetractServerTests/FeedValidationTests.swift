import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// The device feed's validators: every page carries an ETag; a page that
/// listed nothing, asked for again with it, is 304 without a body until a
/// retraction takes one of the device's deliveries; RetractKit sends the
/// validator and takes 304 as nothing new.
@Suite("Device feed validators")
struct FeedValidationTests {
    /// `retract_feed_answers_total{answer}` on `/metrics`.
    static func answers(_ stage: APIStage, _ answer: String) async throws -> Int {
        let metrics = try await stage.call("GET", "/metrics")
        let line = metrics.text.split(separator: "\n").first { $0.hasPrefix(#"retract_feed_answers_total{answer="\#(answer)"}"#) }
        return Int(Double(line?.split(separator: " ").last ?? "") ?? 0)
    }

    @Test func anEmptyPageIsNotModifiedUntilARetractionTakesTheDevice() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let phones = try await stage.key([.client], apps: [stage.chat], name: "phones")
            let (phone, tablet) = (TestTokens.token(1), TestTokens.token(2))
            try await ReconciliationTests.record("r1", [phone, tablet], stage: stage, key: key)
            try await ReconciliationTests.record("r2", [tablet], stage: stage, key: key)
            try await ReconciliationTests.record("r3", [phone], stage: stage, key: key)
            _ = try await ReconciliationTests.retract(["r1"], stage: stage, key: key)
            let feed = "/v1/devices/\(phone.hex)/retractions"
            let first = try await stage.http.poll(feed, key: phones) { ($0.json?["retractions"] as? [Any])?.count == 1 }
            #expect(first.headers["cache-control"] == "private, no-cache")
            let cursor = try #require(first.json?["cursor"] as? String)

            // Nothing new after the cursor: 200 with a validator, then 304 for it, from memory.
            let caughtUp = try await stage.call("GET", "\(feed)?since=\(cursor)", key: phones)
            #expect(caughtUp.status == 200)
            #expect((caughtUp.json?["retractions"] as? [Any])?.isEmpty == true)
            let validator = try #require(caughtUp.headers["etag"])
            #expect(validator.hasPrefix("\"f1.") && validator.hasSuffix("\""))
            let fromMemory = try await Self.answers(stage, "not-modified-from-memory")
            let unchanged = try await stage.call("GET", "\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": validator])
            #expect(unchanged.status == 304)
            #expect(unchanged.body.isEmpty)
            #expect(unchanged.headers["etag"] == validator)
            #expect(unchanged.headers["cache-control"] == "private, no-cache")
            // From memory, once the server listens for new retractions (it starts to as it starts): by this call at the latest.
            let second = try await stage.call("GET", "\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": validator])
            #expect(second.status == 304)
            #expect(try await Self.answers(stage, "not-modified-from-memory") > fromMemory)
            // As one of a list, or weak: the same.
            let listed = try await stage.call(
                "GET", "\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": "\"other\", W/\(validator)"])
            #expect(listed.status == 304)

            // Not this page's validator: another device's, cursor's or page size's, a page that listed some, or none of ours.
            let otherDevice = try await stage.call(
                "GET", "/v1/devices/\(tablet.hex)/retractions?since=\(cursor)", key: phones, headers: ["If-None-Match": validator])
            #expect(otherDevice.status == 200)
            #expect(try await stage.call("GET", feed, key: phones, headers: ["If-None-Match": validator]).status == 200)
            #expect(
                try await stage.call("GET", "\(feed)?since=\(cursor)&limit=5", key: phones, headers: ["If-None-Match": validator]).status
                    == 200)
            let listing = try #require(first.headers["etag"])
            #expect(try await stage.call("GET", feed, key: phones, headers: ["If-None-Match": listing]).status == 200)
            for odd in ["*", "garbage", "\"f1.1.2.3\"", String(repeating: "\"f1\",", count: 2000)] {
                #expect(try await stage.call("GET", "\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": odd]).status == 200)
            }

            // A retraction of the tablet alone: the phone still has nothing new, and the server knows it without reading.
            _ = try await ReconciliationTests.retract(["r2"], stage: stage, key: key)
            _ = try await stage.http.poll("/v1/devices/\(tablet.hex)/retractions", key: phones) {
                ($0.json?["retractions"] as? [Any])?.count == 2
            }
            let beforeTablet = try await Self.answers(stage, "not-modified-from-memory")
            let tabletOnly = try await stage.call("GET", "\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": validator])
            #expect(tabletOnly.status == 304)
            #expect(try await Self.answers(stage, "not-modified-from-memory") == beforeTablet + 1)

            // A retraction of more devices than the ledger names one by one ("*"): the page is read again; still nothing, still 304.
            // (Answered from memory, with the same validator, until the notification arrives.)
            let afterRead = try await Self.answers(stage, "not-modified-after-read")
            _ = try await stage.count(
                "SELECT count(*) FROM (SELECT pg_notify('retract_feed', '\(stage.chat.id) ' || pg_current_xact_id()::text || ' *')) n")
            let stillNothing = try await stage.http.poll(
                "\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": validator], timeout: .seconds(10)
            ) { $0.status != 304 || $0.headers["etag"] != validator }
            #expect(stillNothing.status == 304)
            #expect(try await Self.answers(stage, "not-modified-after-read") == afterRead + 1)
            let newer = try #require(stillNothing.headers["etag"])

            // A retraction of the phone's r3: the validator no longer holds.
            let made = try await ReconciliationTests.retract(["r3"], stage: stage, key: key)
            let changed = try await stage.http.poll("\(feed)?since=\(cursor)", key: phones, headers: ["If-None-Match": newer]) {
                $0.status == 200
            }
            #expect((changed.json?["retractions"] as? [[String: Any]])?.map { $0["id"] as? String } == [made])
        }
    }

    @Test func retractKitSendsTheValidatorAndTakes304AsNothingNew() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let client = try await stage.key([.client], apps: [stage.chat], name: "ios-app")
            let phone = TestTokens.token(7)
            for reference in ["msg-1", "msg-2"] { try await ReconciliationTests.record(reference, [phone], stage: stage, key: key) }
            _ = try await ReconciliationTests.retract(["msg-1"], stage: stage, key: key)
            _ = try await stage.http.poll("/v1/devices/\(phone.hex)/retractions", key: client) {
                ($0.json?["retractions"] as? [Any])?.count == 1
            }
            let center = InMemoryNotificationCenter(delivered: [
                DeliveredNotification(identifier: "A", userInfo: ["notificationCustomData": ["pushNotificationReferenceId": "msg-1"]]),
                DeliveredNotification(identifier: "B", userInfo: ["notificationCustomData": ["pushNotificationReferenceId": "msg-2"]]),
            ])
            let handler = RetractionHandler(center: center)
            let feed = RetractionFeed(baseURL: stage.http.baseURL, apiKey: client)
            let saved = FeedCursor(storage: InMemoryTombstoneStorage())
            try saved.save(token: phone)

            // The first catch-up removes msg-1; the second finds nothing and keeps the page's validator.
            #expect(try await feed.catchUp(from: saved, handler: handler) == .removed(["A"]))
            let cursor = try #require(saved.cursor)
            #expect(try await feed.catchUp(from: saved, handler: handler) == .noMatch)
            #expect(saved.cursor == cursor)
            // The third sends it, and the server answers from memory without a body.
            let notModified = try await Self.answers(stage, "not-modified-from-memory")
            #expect(try await feed.catchUp(from: saved, handler: handler) == .noMatch)
            #expect(try await Self.answers(stage, "not-modified-from-memory") == notModified + 1)
            #expect(center.delivered.map(\.identifier) == ["B"])

            // One page at a time: the validator comes back with the page, and 304 says nothing new.
            let page = try await feed.page(for: phone, since: cursor)
            #expect(page.references.isEmpty && !page.notModified)
            let validator = try #require(page.validator)
            let again = try await feed.page(for: phone, since: cursor, validator: validator)
            #expect(again.notModified)
            #expect(again.references.isEmpty && again.cursor == cursor && !again.hasMore)

            // msg-2 retracted: the saved validator no longer holds, and the catch-up removes it.
            _ = try await ReconciliationTests.retract(["msg-2"], stage: stage, key: key)
            _ = try await stage.http.poll("/v1/devices/\(phone.hex)/retractions", key: client) {
                ($0.json?["retractions"] as? [Any])?.count == 2
            }
            // Memory may answer from before msg-2's notice reached this server, for up to its freshness
            // (FeedMemory): nothing new then, and the next catch-up has it.
            var outcome = try await feed.catchUp(from: saved, handler: handler)
            let deadline = ContinuousClock.now + .seconds(10)
            while outcome == .noMatch, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                outcome = try await feed.catchUp(from: saved, handler: handler)
            }
            #expect(outcome == .removed(["B"]))
            #expect(saved.cursor != cursor)
            #expect(center.delivered.isEmpty)
        }
    }
}
