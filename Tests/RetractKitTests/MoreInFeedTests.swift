import Foundation
import RetractKit
import Testing

/// A retraction push that could not carry everything the device should
/// remove says so (`pushNotificationMoreInFeed`); the app's handler then
/// reads the device feed, which lists it all.
@Suite("The rest is in the device feed")
struct MoreInFeedTests {
    typealias CatchUp = RetractionServiceExtension.FeedCatchUp

    static let phone = DeviceToken(bytes: [0xAB, 0xCD, 0x05, 0x06])

    /// Messages m1 to m5 showing, under their references.
    func center() throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(
            delivered: try (1...5).map { index in
                DeliveredNotification(
                    identifier: "m\(index)",
                    userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m\#(index)"}}"#))
            })
    }

    func handler(_ center: InMemoryNotificationCenter, stub: FeedStub) throws -> RetractionHandler {
        let cursor = FeedCursor(storage: InMemoryTombstoneStorage())
        try cursor.save(token: Self.phone)
        return RetractionHandler(center: center, catchUp: CatchUp(feed: stub.feed, cursor: cursor))
    }

    /// The last of a banned sender's pushes names m4 and m5; the feed names m1 to m5.
    @Test func aPushThatSaysMoreReadsTheFeedAndRemovesWhatItNames() async throws {
        let center = try center()
        let stub = FeedStub { request in request == 0 ? .page([["m1", "m2", "m3", "m4", "m5"]], cursor: "c1") : .page([], cursor: "c1") }
        let push =
            #"{"aps": {"content-available": 1}, "notificationCustomData": {"pushNotificationReferenceIds": ["m4", "m5"], "pushNotificationMoreInFeed": true, "isReferredNotificationMustRemoved": true}}"#
        let report = try await handler(center, stub: stub).handle(RetractPayload.read(try userInfo(push)))
        #expect(report.references == ["m4", "m5"])
        #expect(Set(report.outcome.removedIdentifiers) == ["m1", "m2", "m3", "m4", "m5"])
        #expect(report.catchUp == .caughtUp(.removed(["m1", "m2", "m3"]), references: ["m1", "m2", "m3", "m4", "m5"]))
        #expect(center.delivered.isEmpty)
    }

    /// Without the marker the feed is not read: a chat deletion costs one push and no request.
    @Test func aPushThatCarriesEverythingReadsNothing() async throws {
        let center = try center()
        let stub = FeedStub(always: .page([["m1"]], cursor: "c1"))
        let push =
            #"{"aps": {"content-available": 1}, "notificationCustomData": {"pushNotificationReferenceId": "m4", "isReferredNotificationMustRemoved": true}}"#
        let report = try await handler(center, stub: stub).handle(RetractPayload.read(try userInfo(push)))
        #expect(report.outcome == .removed(["m4"]))
        #expect(report.catchUp == .notConfigured)
        #expect(stub.requestCount == 0)
        #expect(center.delivered.map(\.identifier) == ["m1", "m2", "m3", "m5"])
    }

    /// A feed that cannot be read leaves the push's own removal in place.
    @Test func aFeedThatFailsLeavesThePushsOwnRemoval() async throws {
        let center = try center()
        let stub = FeedStub(always: .offline)
        let push =
            #"{"aps": {"content-available": 1}, "notificationCustomData": {"pushNotificationReferenceIds": ["m4", "m5"], "pushNotificationMoreInFeed": 1, "isReferredNotificationMustRemoved": true}}"#
        let report = try await handler(center, stub: stub).handle(RetractPayload.read(try userInfo(push)))
        #expect(report.outcome == .removed(["m4", "m5"]))
        guard case .failed = report.catchUp else {
            Issue.record("expected a failed catch-up, got \(report.catchUp)")
            return
        }
        #expect(center.delivered.map(\.identifier) == ["m1", "m2", "m3"])
    }

    @Test func theMarkerIsReadAsAFlagIsAndWrittenBack() throws {
        let reading = RetractPayload.read(
            try userInfo(#"{"notificationCustomData": "{\"pushNotificationReferenceId\": \"m1\", \"pushNotificationMoreInFeed\": \"true\", \"isReferredNotificationMustRemoved\": true}"}"#))
        #expect(reading.customData?.moreInFeed == true)
        #expect(reading.diagnostics.isEmpty)
        let odd = RetractPayload.read(
            try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m1", "pushNotificationMoreInFeed": [1], "isReferredNotificationMustRemoved": true}}"#))
        #expect(odd.customData?.moreInFeed == false)
        #expect(odd.retraction == ["m1"])
        #expect(odd.diagnostics.count == 1)
        let encoded = try JSONEncoder().encode(NotificationCustomData(referenceIDs: ["a", "b"], mustRemoveReferred: true, moreInFeed: true))
        #expect(try JSONDecoder().decode(NotificationCustomData.self, from: encoded).moreInFeed)
    }
}

extension RetractionOutcome {
    var removedIdentifiers: [String] {
        if case .removed(let identifiers) = self { identifiers } else { [] }
    }
}
