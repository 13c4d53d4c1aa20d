import Foundation
import RetractKit
import RetractTestSupport
import Testing

/// RetractKit's Notification Service Extension reading the device feed of a
/// real server, for a phone that was offline through a retraction: APNs kept
/// only the next message for it, never the retraction push.
@Suite("Service extension catch-up against the API")
struct ServiceExtensionCatchUpTests {
    /// A message as the app's backend sends it, with `mutable-content` so that the extension runs.
    static func message(_ reference: String) -> [AnyHashable: Any] {
        [
            "aps": ["alert": ["body": "message \(reference)"], "mutable-content": 1],
            "notificationCustomData": ["pushNotificationReferenceId": reference],
        ]
    }

    /// What the phone's extension does when `reference` arrives as request
    /// `identifier`, through the callback form a content handler uses; the
    /// push then shows in `center` unless it was suppressed, as iOS would.
    static func arrive(
        _ reference: String, identifier: String, at service: RetractionServiceExtension, center: InMemoryNotificationCenter
    ) async -> RetractionServiceExtension.Report {
        let userInfo = message(reference)
        let report = await withCheckedContinuation { (continuation: CheckedContinuation<RetractionServiceExtension.Report, Never>) in
            service.handle(identifier: identifier, userInfo: userInfo) { continuation.resume(returning: $0) }
        }
        if report.decision != .suppress { center.deliver(DeliveredNotification(identifier: identifier, userInfo: userInfo)) }
        return report
    }

    /// The phone: m1 showing, nothing caught up yet, the token saved by the
    /// app in the App Group when it registered.
    struct Phone {
        let token = TestTokens.token(31)
        let center = InMemoryNotificationCenter(delivered: [
            DeliveredNotification(identifier: "uuid-1", userInfo: ServiceExtensionCatchUpTests.message("m1"))
        ])
        let appGroup = InMemoryTombstoneStorage()
        let cursor: FeedCursor
        let tombstones: Tombstones

        init() throws {
            cursor = FeedCursor(storage: appGroup)
            try cursor.save(token: token)
            tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        }

        func serviceExtension(baseURL: URL, clientKey: String) -> RetractionServiceExtension {
            RetractionServiceExtension(
                center: center, tombstones: tombstones, hasFilteringEntitlement: false,
                catchUp: .init(feed: RetractionFeed(baseURL: baseURL, apiKey: clientKey), cursor: cursor))
        }
    }

    @Test(.timeLimit(.minutes(3))) func thePhoneOfflineThroughADeletionRemovesItWhenTheNextMessageArrives() async throws {
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let client = try await stage.key([.client], apps: [stage.chat], name: "ios-app")
            let phone = try Phone()
            try await ReconciliationTests.record("m1", [phone.token], stage: stage, key: key)
            try await ReconciliationTests.record("m2", [phone.token], stage: stage, key: key)
            _ = try await ReconciliationTests.retract(["m1"], stage: stage, key: key)
            _ = try await stage.http.poll("/v1/devices/\(phone.token.hex)/retractions", key: client) {
                ($0.json?["retractions"] as? [Any])?.count == 1
            }
            let service = phone.serviceExtension(baseURL: stage.http.baseURL, clientKey: client)

            let m2 = await Self.arrive("m2", identifier: "uuid-2", at: service, center: phone.center)
            #expect(m2.catchUp == .caughtUp(.removed(["uuid-1"]), references: ["m1"]))
            #expect(m2.decision == .passThrough)
            #expect(phone.center.delivered.map(\.identifier) == ["uuid-2"])
            let cursor = try #require(phone.cursor.cursor)
            // In the App Group, where the app at launch finds it too.
            #expect(FeedCursor(storage: phone.appGroup).cursor == cursor)
            #expect(phone.tombstones.references == ["m1"])

            // The next push reads from the cursor: m1's retraction is not read again.
            let m3 = await Self.arrive("m3", identifier: "uuid-3", at: service, center: phone.center)
            #expect(m3.catchUp == .caughtUp(.noMatch, references: []))
            #expect(phone.cursor.cursor == cursor)
            #expect(phone.center.delivered.map(\.identifier) == ["uuid-2", "uuid-3"])

            // A retraction after it is read by the push after that.
            _ = try await ReconciliationTests.retract(["m2"], stage: stage, key: key)
            _ = try await stage.http.poll("/v1/devices/\(phone.token.hex)/retractions?since=\(cursor)", key: client) {
                ($0.json?["retractions"] as? [Any])?.count == 1
            }
            let m4 = await Self.arrive("m4", identifier: "uuid-4", at: service, center: phone.center)
            #expect(m4.catchUp == .caughtUp(.removed(["uuid-2"]), references: ["m2"]))
            #expect(phone.center.delivered.map(\.identifier) == ["uuid-3", "uuid-4"])
            #expect(phone.cursor.cursor != cursor)
        }
    }

    @Test(.timeLimit(.minutes(3))) func withTheAPIStoppedTheNextMessageShowsAndNothingIsRemoved() async throws {
        var stopped: (baseURL: URL, client: String)?
        try await APIStage.with { stage in
            let key = try await stage.chatKey()
            let client = try await stage.key([.client], apps: [stage.chat], name: "ios-app")
            let token = TestTokens.token(31)
            try await ReconciliationTests.record("m1", [token], stage: stage, key: key)
            _ = try await ReconciliationTests.retract(["m1"], stage: stage, key: key)
            stopped = (stage.http.baseURL, client)
        }
        let api = try #require(stopped)
        let phone = try Phone()
        let service = phone.serviceExtension(baseURL: api.baseURL, clientKey: api.client)

        let start = ContinuousClock.now
        let m2 = await Self.arrive("m2", identifier: "uuid-2", at: service, center: phone.center)
        #expect(ContinuousClock.now - start < .seconds(RetractionServiceExtension.FeedCatchUp.defaultBudget + 1))
        guard case .failed(let error) = m2.catchUp else {
            Issue.record("expected the feed to fail, got \(m2.catchUp)")
            return
        }
        #expect(error.status == nil)
        #expect(m2.decision == .passThrough)
        #expect(phone.center.delivered.map(\.identifier) == ["uuid-1", "uuid-2"])
        #expect(phone.cursor.cursor == nil)
        #expect(phone.tombstones.references.isEmpty)
    }
}
