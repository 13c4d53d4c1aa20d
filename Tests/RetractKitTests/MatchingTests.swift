import Foundation
import RetractKit
import Testing

@Suite("Matching delivered notifications")
struct MatchingTests {
    static let showing: [DeliveredNotification] = [
        DeliveredNotification(identifier: "uuid-1", referenceID: "msg-1"),
        DeliveredNotification(identifier: "msg-2"),
        DeliveredNotification(identifier: "uuid-3", referenceID: "msg-3"),
        DeliveredNotification(identifier: "uuid-4"),
        DeliveredNotification(identifier: "uuid-5", referenceID: "msg-1"),
        DeliveredNotification(identifier: "233"),
    ]

    @Test func matchesByCustomDataReference() {
        #expect(Self.showing.identifiers(retractedBy: ["msg-3"]) == ["uuid-3"])
    }

    @Test func matchesByIdentifier() {
        // An original sent with apns-collapse-id = reference has that identifier.
        #expect(Self.showing.identifiers(retractedBy: ["msg-2"]) == ["msg-2"])
        #expect(Self.showing.identifiers(retractedBy: [233]) == ["233"])
    }

    @Test func notificationWithNeitherNeverMatches() {
        #expect(Self.showing.identifiers(retractedBy: ["uuid-x", "msg-9"]).isEmpty)
        #expect(!DeliveredNotification(identifier: "uuid-4").isRetracted(by: ["msg-1", "msg-2"]))
    }

    @Test func everyNotificationOfAReferenceIsRemovedOnce() {
        #expect(Self.showing.identifiers(retractedBy: ["msg-1", "msg-1", "uuid-1"]) == ["uuid-1", "uuid-5"])
        #expect(Self.showing.identifiers(retractedBy: ["msg-1", "msg-2", "msg-3"]) == ["uuid-1", "msg-2", "uuid-3", "uuid-5"])
    }

    @Test func deliveredNotificationReadsItsReferenceFromUserInfo() throws {
        let legacy = try userInfo(#"{"aps": {"alert": "x"}, "notifcationCustomData": "{\"pushNotificationReferanceId\": 233}"}"#)
        #expect(DeliveredNotification(identifier: "u", userInfo: legacy).referenceID == 233)
        let malformed = try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": []}}"#)
        #expect(DeliveredNotification(identifier: "u", userInfo: malformed) == DeliveredNotification(identifier: "u"))
        // Only the reference matters for an original: an odd flag does not hide it.
        let oddFlag = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1", "isReferredNotificationMustRemoved": "yes"}}"#)
        #expect(DeliveredNotification(identifier: "u", userInfo: oddFlag).referenceID == "msg-1")
    }
}

@Suite("RetractionHandler")
struct RetractionHandlerTests {
    func center() throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(delivered: [
            DeliveredNotification(
                identifier: "a1", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1"}}"#)),
            DeliveredNotification(
                identifier: "a2", userInfo: try userInfo(#"{"notifcationCustomData": {"pushNotificationReferanceId": 233}}"#)),
            DeliveredNotification(identifier: "msg-3", userInfo: try userInfo(#"{"aps": {"alert": "collapsed"}}"#)),
        ])
    }

    @Test func retractionRemovesTheMatchingNotifications() async throws {
        let center = try center()
        let handler = RetractionHandler(center: center)
        let outcome = await handler.handle(userInfo: try userInfo(CustomDataDecodingTests.articleAPNsRetraction))
        #expect(outcome == .removed(["a2"]))
        #expect(center.delivered.map(\.identifier) == ["a1", "msg-3"])

        let batch = try userInfo(
            #"{"aps": {"content-available": 1}, "notificationCustomData": {"pushNotificationReferenceIds": ["msg-1", "msg-3"], "isReferredNotificationMustRemoved": "true"}}"#
        )
        #expect(await handler.handle(userInfo: batch) == .removed(["a1", "msg-3"]))
        #expect(center.delivered.isEmpty)
    }

    @Test func outcomesForPushesThatRemoveNothing() async throws {
        let center = try center()
        let handler = RetractionHandler(center: center)
        #expect(await handler.handle(userInfo: try userInfo(#"{"aps": {"alert": "hello"}}"#)) == .notARetraction)
        #expect(
            await handler.handle(
                userInfo: try userInfo(
                    #"{"notificationCustomData": {"pushNotificationReferenceId": 1.5, "isReferredNotificationMustRemoved": true}}"#))
                == .notARetraction
        )
        #expect(
            await handler.handle(
                userInfo: try userInfo(
                    #"{"notificationCustomData": {"pushNotificationReferenceId": "gone", "isReferredNotificationMustRemoved": true}}"#))
                == .noMatch
        )
        #expect(center.delivered.count == 3)
    }

    @Test func handlerRemembersRetractedReferences() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let handler = RetractionHandler(center: try center(), tombstones: tombstones)
        _ = await handler.retract(["msg-1", "not-yet-arrived"])
        #expect(tombstones.contains("not-yet-arrived"))
        #expect(tombstones.contains("msg-1"))
        #expect(!tombstones.contains("msg-3"))
    }

    @MainActor
    @Test(.timeLimit(.minutes(1))) func completionFormAlwaysCallsBackOnce() async throws {
        let handler = RetractionHandler(center: try center())
        let pushes = [
            #"{"aps": {"alert": "not a retraction"}}"#,
            #"{"notificationCustomData": "{broken"}"#,
            #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1", "isReferredNotificationMustRemoved": 1}}"#,
            #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1", "isReferredNotificationMustRemoved": 1}}"#,
        ]
        var outcomes: [RetractionOutcome] = []
        for push in pushes {
            let info = try userInfo(push)
            // A UIKit completion handler is a plain, non-Sendable closure.
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<RetractionOutcome, Never>) in
                var calls = 0
                let completionHandler: (RetractionOutcome) -> Void = { outcome in
                    calls += 1
                    precondition(calls == 1, "completion called twice")
                    continuation.resume(returning: outcome)
                }
                handler.handle(userInfo: info) { completionHandler($0) }
            }
            outcomes.append(outcome)
        }
        #expect(outcomes == [.notARetraction, .notARetraction, .removed(["a1"]), .noMatch])
    }

    @MainActor
    @Test func asyncFormRunsOnTheCallersActorWithNonSendableUserInfo() async throws {
        // The app delegate is main-actor isolated and userInfo is not Sendable:
        // this must compile and run without crossing an isolation boundary.
        let info: [AnyHashable: Any] = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-3", "isReferredNotificationMustRemoved": true}}"#)
        #expect(await RetractionHandler(center: try center()).handle(userInfo: info) == .removed(["msg-3"]))
    }

    @Test func centerReplacesANotificationWithTheSameIdentifier() {
        let center = InMemoryNotificationCenter()
        center.deliver(DeliveredNotification(identifier: "x", referenceID: "old"))
        center.deliver(DeliveredNotification(identifier: "y"))
        center.deliver(DeliveredNotification(identifier: "x", referenceID: "new"))
        #expect(center.delivered == [DeliveredNotification(identifier: "y"), DeliveredNotification(identifier: "x", referenceID: "new")])
    }
}

extension RetractionHandler {
    /// The shape of RetractKit's UIKit entry point (RetractionOutcome+UIKit.swift),
    /// which only builds on Apple platforms: a main-actor method forwarding a
    /// plain, non-Sendable completion handler. This copy keeps its isolation
    /// checked on Linux.
    @MainActor
    func handleLikeTheUIKitEntryPoint(userInfo: [AnyHashable: Any], fetchCompletionHandler completionHandler: @escaping (Bool) -> Void) {
        handle(userInfo: userInfo) { outcome in completionHandler(outcome != .notARetraction && outcome != .noMatch) }
    }

    /// The same for the form that handles retractions only.
    @MainActor
    func handleIfRetractionLikeTheUIKitEntryPoint(
        userInfo: [AnyHashable: Any], fetchCompletionHandler completionHandler: @escaping (Bool) -> Void
    ) -> Bool {
        handleIfRetraction(userInfo: userInfo) { report in completionHandler(report.outcome != .noMatch) }
    }
}

@Suite("UIKit entry point shape")
struct UIKitEntryPointShapeTests {
    @MainActor
    @Test func forwardsTheOutcomeToAPlainCompletionHandler() async throws {
        let center = InMemoryNotificationCenter(delivered: [DeliveredNotification(identifier: "msg-1")])
        let handler = RetractionHandler(center: center)
        let info = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1", "isReferredNotificationMustRemoved": true}}"#)
        let removed = await withCheckedContinuation { continuation in
            handler.handleLikeTheUIKitEntryPoint(userInfo: info) { continuation.resume(returning: $0) }
        }
        #expect(removed)
        #expect(center.delivered.isEmpty)
    }

    @MainActor
    @Test(.timeLimit(.minutes(1))) func theRetractionOnlyFormForwardsToAPlainCompletionHandler() async throws {
        let handler = RetractionHandler(center: InMemoryNotificationCenter(delivered: [DeliveredNotification(identifier: "msg-1")]))
        #expect(
            !handler.handleIfRetractionLikeTheUIKitEntryPoint(userInfo: try userInfo(#"{"aps": {"alert": "hi"}}"#)) { _ in
                Issue.record("called")
            })
        let info = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1", "isReferredNotificationMustRemoved": true}}"#)
        let removed = await withCheckedContinuation { continuation in
            let handled = handler.handleIfRetractionLikeTheUIKitEntryPoint(userInfo: info) { continuation.resume(returning: $0) }
            #expect(handled)
            if !handled { continuation.resume(returning: false) }
        }
        #expect(removed)
    }
}
