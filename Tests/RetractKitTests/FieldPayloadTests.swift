import Foundation
import RetractKit
import Testing

/// Payloads a real fleet sends, through the calls an app makes: the app
/// delegate's `handle(userInfo:)` and the Notification Service Extension's
/// `Tombstones.wasRetracted`.
@Suite("Payloads from the field")
struct FieldPayloadTests {
    static func showing(_ notifications: [(identifier: String, json: String)]) throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(
            delivered: try notifications.map { DeliveredNotification(identifier: $0.identifier, userInfo: try userInfo($0.json)) })
    }

    // MARK: 1. Both custom data keys

    @Test func aServerMovingFromTheArticlesKeysRetractsWhatEitherKeyNames() async throws {
        let center = try Self.showing([
            ("old-client", #"{"notifcationCustomData": {"pushNotificationReferanceId": 233}}"#),
            ("new-client", #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-233"}}"#),
            ("unrelated", #"{"notificationCustomData": {"pushNotificationReferenceId": "msg-234"}}"#),
        ])
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let push = try userInfo(
            """
            {"aps": {"content-available": 1},
             "notifcationCustomData": {"pushNotificationReferanceId": 233, "isReferedNotificationMustRemoved": true},
             "notificationCustomData": {"pushNotificationReferenceId": "msg-233", "isReferredNotificationMustRemoved": true}}
            """
        )
        let outcome = await RetractionHandler(center: center, tombstones: tombstones).handle(userInfo: push)
        #expect(outcome == .removed(["old-client", "new-client"]))
        #expect(center.delivered.map(\.identifier) == ["unrelated"])
        #expect(Set(tombstones.references) == [233, "msg-233"])
    }

    @Test func theFlagUnderEitherKeyMakesTheUnionARetraction() async throws {
        let center = try Self.showing([("233", "{}"), ("msg-233", "{}"), ("msg-234", "{}")])
        let push = try userInfo(
            #"{"notifcationCustomData": "{\"pushNotificationReferanceId\": 233, \"isReferedNotificationMustRemoved\": true}", "notificationCustomData": {"pushNotificationReferenceIds": ["msg-233"]}}"#
        )
        #expect(await RetractionHandler(center: center).handle(userInfo: push) == .removed(["233", "msg-233"]))
    }

    // MARK: 2. One bad value

    @Test func aBadElementDropsOnlyItselfAndIsReported() async throws {
        let center = try Self.showing([("m1", "{}"), ("m2", "{}"), ("m4", "{}")])
        let push = try userInfo(
            #"{"aps": {"content-available": 1}, "notificationCustomData": {"pushNotificationReferenceIds": ["m1", {"id": "m2"}, 1.5, "", "m4"], "isReferredNotificationMustRemoved": true}}"#
        )
        let handler = RetractionHandler(center: center)
        let report = await handler.handle(RetractPayload.read(push))
        #expect(report.outcome == .removed(["m1", "m4"]))
        #expect(report.references == ["m1", "m4"])
        #expect(
            report.diagnostics == [
                .wrongType(
                    key: "notificationCustomData.pushNotificationReferenceIds[1]", expected: "a string or an integer", found: "an object"),
                .invalidValue(key: "notificationCustomData.pushNotificationReferenceIds[2]", reason: "1.5 is not an integer reference"),
                .invalidValue(key: "notificationCustomData.pushNotificationReferenceIds[3]", reason: "a reference must not be empty"),
            ]
        )
        #expect(center.delivered.map(\.identifier) == ["m2"])
        // The app delegate's call removes the same.
        let again = try Self.showing([("m1", "{}"), ("m2", "{}"), ("m4", "{}")])
        #expect(await RetractionHandler(center: again).handle(userInfo: push) == .removed(["m1", "m4"]))
    }

    @Test func aFlagThatIsNotAnAcceptedFormRemovesNothingAndIsReported() async throws {
        let center = try Self.showing([("m1", "{}")])
        for flag in [#""yes""#, "2", "[]", #""TRUE""#] {
            let push = try userInfo(
                #"{"notificationCustomData": {"pushNotificationReferenceId": "m1", "isReferredNotificationMustRemoved": \#(flag)}}"#)
            let report = await RetractionHandler(center: center).handle(RetractPayload.read(push))
            #expect(report.outcome == .notARetraction, "\(flag)")
            #expect(report.diagnostics.map(\.key) == ["notificationCustomData.isReferredNotificationMustRemoved"], "\(flag)")
        }
        #expect(center.delivered.map(\.identifier) == ["m1"])
    }

    // MARK: 3. Originals with several references

    @Test func aSummaryIsRemovedWhenOneOfItsReferencesIsRetracted() async throws {
        let center = try Self.showing([
            (
                "summary",
                #"{"aps": {"alert": "3 new messages"}, "notificationCustomData": {"pushNotificationReferenceIds": ["m1", "m2", "m3"]}}"#
            ),
            ("other", #"{"notificationCustomData": "{\"pushNotificationReferenceIds\": [\"m4\"]}"}"#),
        ])
        let push = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "m2", "isReferredNotificationMustRemoved": true}}"#)
        #expect(await RetractionHandler(center: center).handle(userInfo: push) == .removed(["summary"]))
        #expect(center.delivered.map(\.identifier) == ["other"])
    }

    @Test func theExtensionDropsALateSummaryOneOfWhoseReferencesWasRetracted() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let push = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "m2", "isReferredNotificationMustRemoved": true}}"#)
        #expect(await RetractionHandler(center: InMemoryNotificationCenter(), tombstones: tombstones).handle(userInfo: push) == .noMatch)
        let summary = try userInfo(
            #"{"aps": {"alert": "3 new messages"}, "notificationCustomData": {"pushNotificationReferenceIds": ["m1", "m2", "m3"]}}"#)
        #expect(tombstones.wasRetracted(identifier: "summary", userInfo: summary))
        let unrelated = try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceIds": ["m4", "m5"]}}"#)
        #expect(!tombstones.wasRetracted(identifier: "later", userInfo: unrelated))
    }

    // MARK: 4. Flat data

    @Test func flatFCMDataIsReadInBothSpellings() async throws {
        let center = try Self.showing([
            ("a", #"{"pushNotificationReferenceId": "msg-8812"}"#),
            ("b", #"{"notifcationCustomData": {"pushNotificationReferanceId": 233}}"#),
            ("c", #"{"pushNotificationReferenceId": "3"}"#),
            ("d", #"{"pushNotificationReferenceId": "msg-9"}"#),
        ])
        let handler = RetractionHandler(center: center)
        let canonical = try userInfo(
            #"{"aps": {"content-available": 1}, "gcm.message_id": "0:1", "pushNotificationReferenceIds": "[\"msg-8812\", 3]", "isReferredNotificationMustRemoved": "true"}"#
        )
        #expect(await handler.handle(userInfo: canonical) == .removed(["a", "c"]))
        let legacy = try userInfo(#"{"pushNotificationReferanceId": "233", "isReferedNotificationMustRemoved": "1"}"#)
        #expect(await handler.handle(userInfo: legacy) == .removed(["b"]))
        #expect(center.delivered.map(\.identifier) == ["d"])
    }

    @Test func theExtensionRecognisesALateFlatOriginal() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let push = try userInfo(#"{"pushNotificationReferenceId": "msg-8812", "isReferredNotificationMustRemoved": "true"}"#)
        _ = await RetractionHandler(center: InMemoryNotificationCenter(), tombstones: tombstones).handle(userInfo: push)
        #expect(tombstones.wasRetracted(identifier: "uuid-1", userInfo: try userInfo(#"{"pushNotificationReferenceId": "msg-8812"}"#)))
        #expect(!tombstones.wasRetracted(identifier: "uuid-2", userInfo: try userInfo(#"{"pushNotificationReferenceId": "msg-8813"}"#)))
    }

    @Test func flatKeysAreNotReadNextToACustomDataObject() throws {
        let push = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "m1"}, "pushNotificationReferenceId": "m2", "isReferredNotificationMustRemoved": "true"}"#
        )
        #expect(RetractPayload.read(push) == RetractPayload.Reading(customData: NotificationCustomData(referenceID: "m1")))
    }

    // MARK: 5. The completion handler

    /// Hands `push` to the handler the way an app with silent pushes of its
    /// own does, and counts the calls of a plain, non-Sendable completion
    /// handler, as UIKit's is.
    @MainActor
    func handleNextToTheAppsOwnHandling(
        _ push: [AnyHashable: Any], handler: RetractionHandler
    ) async -> (calls: Int, outcome: RetractionOutcome?) {
        var calls = 0
        var outcome: RetractionOutcome?
        var finished: CheckedContinuation<Void, Never>?
        let completionHandler: (RetractionOutcome?) -> Void = { result in
            calls += 1
            outcome = result
            finished?.resume()
            finished = nil
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finished = continuation
            if handler.handleIfRetraction(userInfo: push, completion: { report in completionHandler(report.outcome) }) {
                return
            }
            // Not a retraction: the app's own handling calls it.
            completionHandler(nil)
        }
        // Anything the handler might still call would have run by now.
        for _ in 0..<10 { await Task.yield() }
        return (calls, outcome)
    }

    @MainActor
    @Test(.timeLimit(.minutes(1))) func theRetractionOnlyFormLeavesOtherPushesToTheApp() async throws {
        let center = try Self.showing([("m1", "{}")])
        let handler = RetractionHandler(center: center)
        let appsOwn = try userInfo(#"{"aps": {"content-available": 1}, "sync": "inbox"}"#)
        let original = try userInfo(#"{"aps": {"alert": "hi"}, "notificationCustomData": {"pushNotificationReferenceId": "m1"}}"#)
        for push in [appsOwn, original] {
            let handled = await handleNextToTheAppsOwnHandling(push, handler: handler)
            #expect(handled.calls == 1)
            #expect(handled.outcome == nil)
        }
        let retraction = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "m1", "isReferredNotificationMustRemoved": 1}}"#)
        let handled = await handleNextToTheAppsOwnHandling(retraction, handler: handler)
        #expect(handled.calls == 1)
        #expect(handled.outcome == .removed(["m1"]))
        let again = await handleNextToTheAppsOwnHandling(retraction, handler: handler)
        #expect(again.calls == 1)
        #expect(again.outcome == .noMatch)
    }

    @MainActor
    @Test(.timeLimit(.minutes(1))) func theRetractionOnlyFormCarriesTheDiagnostics() async throws {
        let handler = RetractionHandler(center: try Self.showing([("m1", "{}")]))
        let push = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceIds": ["m1", ""], "isReferredNotificationMustRemoved": true}}"#)
        let report = await withCheckedContinuation { (continuation: CheckedContinuation<RetractionReport, Never>) in
            let handled = handler.handleIfRetraction(userInfo: push) { continuation.resume(returning: $0) }
            #expect(handled)
        }
        #expect(report.outcome == .removed(["m1"]))
        #expect(report.diagnostics.map(\.key) == ["notificationCustomData.pushNotificationReferenceIds[1]"])
    }
}
