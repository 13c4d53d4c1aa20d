import Dispatch
import Foundation
import RetractKit
import Testing

/// iOS removes delivered notifications later, on a queue of its own, and a
/// process ends soon after it hands back what iOS waits for: the content of
/// an extension, the fetch result of an app. These tests run RetractKit
/// against a Notification Center that removes that way and a process that
/// ends there, and look at what is still showing afterwards.
@Suite("Removal, as iOS applies it")
struct RemovalTests {
    /// Later than RetractKit's first look at Notification Center (10 ms after asking).
    static let iOSDelay: TimeInterval = 0.05

    static let carrier = """
        {"aps": {"alert": {"body": "This message was deleted"}, "mutable-content": 1},
         "notificationCustomData": {"pushNotificationReferenceId": "m1", "isReferredNotificationMustRemoved": true}}
        """
    static let silent = """
        {"aps": {"content-available": 1},
         "notificationCustomData": {"pushNotificationReferenceId": "m1", "isReferredNotificationMustRemoved": true}}
        """

    /// `m1`, retracted by the pushes above, and `m2`, which must stay.
    static func center(removal: InMemoryNotificationCenter.Removal) throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(
            delivered: [
                DeliveredNotification(
                    identifier: "uuid-1", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m1"}}"#)),
                DeliveredNotification(
                    identifier: "uuid-2", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m2"}}"#)),
            ],
            removal: removal)
    }

    /// What is showing once whatever was still to be applied had time to be.
    static func showingAfterwards(_ center: InMemoryNotificationCenter) async throws -> [String] {
        try await Task.sleep(nanoseconds: UInt64(iOSDelay * 4 * 1_000_000_000))
        return center.delivered.map(\.identifier)
    }

    @Test func theExtensionHandsBackItsContentOnlyOnceTheRemovalHappened() async throws {
        let center = try Self.center(removal: .deferred(seconds: Self.iOSDelay))
        let service = RetractionServiceExtension(center: center, tombstones: nil, hasFilteringEntitlement: true)
        let report = await ExtensionProcess(center: center).receive(service, identifier: "m1", userInfo: try userInfo(Self.carrier))
        #expect(report.decision == .suppress)
        #expect(report.retraction.outcome == .removed(["uuid-1"]))
        #expect(try await Self.showingAfterwards(center) == ["uuid-2"])
    }

    @MainActor
    @Test func theAppCallsItsFetchHandlerOnlyOnceTheRemovalHappened() async throws {
        let center = try Self.center(removal: .deferred(seconds: Self.iOSDelay))
        let handler = RetractionHandler(center: center)
        let push = try userInfo(Self.silent)
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<RetractionOutcome, Never>) in
            handler.handle(userInfo: push) { outcome in
                // The fetch completion handler: iOS suspends the app here, and
                // a removal still on its queue waits with it, or is lost if the
                // app is then ended.
                center.endProcess()
                done.resume(returning: outcome)
            }
        }
        #expect(outcome == .removed(["uuid-1"]))
        #expect(try await Self.showingAfterwards(center) == ["uuid-2"])
    }

    @Test func aRemovalStillListedAfterTheWaitIsNotConfirmed() async throws {
        let center = try Self.center(removal: .deferred(seconds: 60))
        defer { center.endProcess() }
        let handler = RetractionHandler(center: center, removalWait: 0.2)
        let started = DispatchTime.now().uptimeNanoseconds
        let outcome = await handler.handle(userInfo: try userInfo(Self.silent))
        let waited = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(outcome == .notConfirmed(["uuid-1"]))
        #expect(waited >= 0.2 && waited < 2, "waited \(waited) s")
    }

    @Test func theFeedIsReadAgainAfterARemovalThatWasNotConfirmed() async throws {
        let center = try Self.center(removal: .deferred(seconds: 60))
        defer { center.endProcess() }
        let cursor = FeedCursor(storage: InMemoryTombstoneStorage())
        try cursor.save(token: DeviceToken(bytes: [0xAB, 0xCD]))
        let stub = FeedStub(always: .page([["m1"]], cursor: "c1"))
        let handler = RetractionHandler(center: center, removalWait: 0.1)

        #expect(try await stub.feed.catchUp(from: cursor, handler: handler) == .notConfirmed(["uuid-1"]))
        #expect(cursor.cursor == nil)
        let since = try await stub.feed.catchUp(token: DeviceToken(bytes: [0xAB, 0xCD]), since: "c0", handler: handler)
        #expect(since.outcome == .notConfirmed(["uuid-1"]))
        #expect(since.cursor == "c0")
    }

    @Test func anImmediateRemovalIsConfirmedAtTheFirstLook() async throws {
        let center = try Self.center(removal: .immediate)
        let started = DispatchTime.now().uptimeNanoseconds
        let outcome = await RetractionHandler(center: center).handle(userInfo: try userInfo(Self.silent))
        #expect(outcome == .removed(["uuid-1"]))
        #expect(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 < 0.5)
        #expect(center.delivered.map(\.identifier) == ["uuid-2"])
    }

    @Test func theCentreDropsWhatWasStillToBeRemovedWhenTheProcessEnds() throws {
        let center = try Self.center(removal: .deferred(seconds: 60))
        center.removeDeliveredNotifications(withIdentifiers: ["uuid-1"])
        #expect(center.pendingRemovals == 1)
        center.endProcess()
        #expect(center.pendingRemovals == 0)
        center.removeDeliveredNotifications(withIdentifiers: ["uuid-2"])
        #expect(center.delivered.map(\.identifier) == ["uuid-1", "uuid-2"])
    }
}

/// A Notification Service Extension's process as iOS runs it: one push
/// handed to `didReceive`, and the process ended as soon as the content
/// handler is called, whatever it left running.
struct ExtensionProcess {
    let center: InMemoryNotificationCenter

    func receive(
        _ service: RetractionServiceExtension, identifier: String, userInfo: [AnyHashable: Any]
    ) async -> RetractionServiceExtension.Report {
        await withCheckedContinuation { done in
            service.handle(identifier: identifier, userInfo: userInfo) { report in
                center.endProcess()
                done.resume(returning: report)
            }
        }
    }
}
