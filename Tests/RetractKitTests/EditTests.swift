import Foundation
import RetractKit
import Testing

/// Edits on the device: the push as the server writes it, what the app's
/// handler and its Notification Service Extension do with it.
@Suite("Edits")
struct EditTests {
    static let edit = NotificationEdit(title: "Ada", body: "See you at 9?")

    /// Showing before the edit: `m1` under its reference (its collapse id),
    /// `m1` again as a summary under an identifier of its own, `m2` untouched.
    static func center() -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(delivered: [
            DeliveredNotification(identifier: "m1", title: "Ada", body: "See you at 8?"),
            DeliveredNotification(identifier: "summary", referenceIDs: ["m0", "m1"], title: "2 messages", body: "Ada: See you at 8?"),
            DeliveredNotification(identifier: "m2", title: "Bob", body: "Lunch?"),
        ])
    }

    @Test func theBodyCarriesTheReferenceAndTheNewTextAndNoRemovalFlagInBothDialects() throws {
        let canonical = try PayloadBuilder(dialect: .canonical).editBody(for: "msg-8812", edit: Self.edit)
        #expect(
            canonical.utf8String
                == #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"msg-8812","pushNotificationEdit":{"title":"Ada","body":"See you at 9?"}}}"#
        )
        let legacy = try PayloadBuilder(dialect: .legacy).editBody(
            for: "233", edit: NotificationEdit(body: "Spring sale: 25% off"),
            aps: .alert(title: nil, body: "Spring sale: 25% off", interruption: .active))
        #expect(
            legacy.utf8String
                == #"{"aps":{"alert":{"body":"Spring sale: 25% off"}},"notifcationCustomData":{"pushNotificationReferanceId":233,"pushNotificationEdit":{"body":"Spring sale: 25% off"}}}"#
        )
        #expect(throws: RetractPayloadError.referenceNotAnInteger("msg-1")) {
            try PayloadBuilder(dialect: .legacy).editBody(for: "msg-1", edit: Self.edit)
        }
        #expect(throws: RetractPayloadError.bodyTooLarge(size: 4128, limit: 4096)) {
            try PayloadBuilder().editBody(for: "m1", edit: NotificationEdit(body: String(repeating: "x", count: 4000)))
        }
        // What a device reads back is the edit, of the reference, and no retraction.
        let reading = RetractPayload.read(try userInfo(canonical.utf8String))
        #expect(reading.retraction == nil)
        #expect(reading.edit == RetractPayload.Edit(references: ["msg-8812"], title: "Ada", body: "See you at 9?"))
        // Alerts are passive and ranked last unless the app asks for active ones; never with a sound.
        #expect(
            RetractionAPS.alert(title: "Ada", body: "hi", mutableContent: true, thread: "c-1").json
                == #"{"alert":{"title":"Ada","body":"hi"},"interruption-level":"passive","mutable-content":1,"relevance-score":0,"thread-id":"c-1"}"#
        )
        #expect(
            RetractionAPS.alert("gone", badge: 0).json
                == #"{"alert":{"body":"gone"},"badge":0,"interruption-level":"passive","relevance-score":0}"#)
        #expect(RetractionAPS.alert("gone", badge: 0, interruption: .active).json == #"{"alert":{"body":"gone"},"badge":0}"#)
    }

    @Test func theAppShowsTheNewTextInPlaceOfEveryNotificationOfTheReferenceAndKeepsTheTitleWhenNoneComes() async throws {
        let center = Self.center()
        let handler = RetractionHandler(center: center)
        let push = try userInfo(
            #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","pushNotificationEdit":{"body":"See you at 9?"}}}"#
        )
        let report = await handler.handle(RetractPayload.read(push))
        #expect(report.outcome == .notARetraction)
        #expect(report.edit?.edited == ["m1", "summary"])
        #expect(report.edit?.wasRetracted == false)
        let shown = Dictionary(uniqueKeysWithValues: center.delivered.map { ($0.identifier, $0) })
        #expect(shown["m1"]?.title == "Ada" && shown["m1"]?.body == "See you at 9?")
        #expect(shown["summary"]?.title == "2 messages" && shown["summary"]?.body == "See you at 9?")
        #expect(shown["m2"]?.body == "Lunch?")
        // The edited ones are the newest now, as iOS lists a notification added again.
        #expect(center.delivered.map(\.identifier) == ["m2", "m1", "summary"])
    }

    @Test func aDismissedOriginalStaysGoneAndARetractedOneIsNeverShownAgain() async throws {
        let center = InMemoryNotificationCenter(delivered: [DeliveredNotification(identifier: "m2", body: "Lunch?")])
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["m3"])
        let handler = RetractionHandler(center: center, tombstones: tombstones)
        let dismissed = await handler.edit(RetractPayload.Edit(references: ["m1"], title: nil, body: "fixed"))
        #expect(dismissed.edited.isEmpty && !dismissed.wasRetracted)
        // m3 was retracted here, and a notification naming it shows again (a summary): the edit leaves it.
        center.deliver(DeliveredNotification(identifier: "m3", body: "old"))
        let retracted = await handler.edit(RetractPayload.Edit(references: ["m3"], title: nil, body: "fixed"))
        #expect(retracted.edited.isEmpty && retracted.wasRetracted)
        #expect(center.delivered.map { $0.body ?? "" } == ["Lunch?", "old"])
    }

    @Test @MainActor func anAppThatHandlesSilentPushesOfItsOwnIsHandedEditsToo() async throws {
        let handler = RetractionHandler(center: Self.center())
        let push = try userInfo(
            #"{"notificationCustomData":{"pushNotificationReferenceId":"m1","pushNotificationEdit":"{\"body\":\"x\"}"}}"#)
        let report = await withCheckedContinuation { continuation in
            let handled = handler.handleIfRetraction(userInfo: push) { continuation.resume(returning: $0) }
            #expect(handled)
        }
        #expect(report.edit?.edited == ["m1", "summary"])
        let other = try userInfo(#"{"aps":{"content-available":1},"sync":true}"#)
        #expect(!handler.handleIfRetraction(userInfo: other) { _ in Issue.record("not an edit") })
    }

    /// An edit carrier (service-extension mode) under the collapse id of `m1`.
    static let carrier = """
        {"aps": {"alert": {"body": "See you at 9?"}, "mutable-content": 1},
         "notificationCustomData": {"pushNotificationReferenceId": "m1", "pushNotificationEdit": {"body": "See you at 9?"}}}
        """

    @Test(arguments: [false, true])
    func theCarrierTakesTheOriginalsPlaceWithItsTitleAndTheOthersShowingItGo(filtering: Bool) async throws {
        let center = Self.center()
        let service = RetractionServiceExtension(
            center: center, tombstones: Tombstones(storage: InMemoryTombstoneStorage()), hasFilteringEntitlement: filtering)
        let report = await service.handle(identifier: "m1", userInfo: try userInfo(Self.carrier))
        #expect(report.decision == .showEdit(title: "Ada", body: "See you at 9?"))
        #expect(report.retraction.edit?.edited == ["m1", "summary"])
        // The summary under another identifier went; the original's place is the carrier's.
        #expect(center.delivered.map(\.identifier) == ["m1", "m2"])
    }

    @Test(arguments: [false, true])
    func aCarrierWhoseOriginalWasDismissedIsHiddenWhereTheExtensionCan(filtering: Bool) async throws {
        let center = InMemoryNotificationCenter(delivered: [DeliveredNotification(identifier: "m2", body: "Lunch?")])
        let service = RetractionServiceExtension(
            center: center, tombstones: Tombstones(storage: InMemoryTombstoneStorage()), hasFilteringEntitlement: filtering)
        let report = await service.handle(identifier: "m1", userInfo: try userInfo(Self.carrier))
        #expect(report.decision == (filtering ? .suppress : .passThrough))
        #expect(report.retraction.edit?.edited == [])
        #expect(center.delivered.map(\.identifier) == ["m2"])
    }

    @Test(arguments: [false, true])
    func aCarrierOfARetractedMessageIsHandledAsALateOriginal(filtering: Bool) async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["m1"])
        let service = RetractionServiceExtension(center: Self.center(), tombstones: tombstones, hasFilteringEntitlement: filtering)
        let report = await service.handle(identifier: "m1", userInfo: try userInfo(Self.carrier))
        #expect(report.decision == (filtering ? .suppress : .replaceBody(RetractionServiceExtension.defaultRetractionText)))
        #expect(report.wasRetracted)
        #expect(report.retraction.edit?.wasRetracted == true)
    }
}
