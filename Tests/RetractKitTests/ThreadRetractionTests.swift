import Foundation
import RetractKit
import Testing

/// A conversation retracted whole: `pushNotificationThreadIds` removes every
/// notification whose thread (`aps.thread-id`, the request's
/// `threadIdentifier`, or `pushNotificationThreadId`) is one of them.
@Suite("Retraction by thread")
struct ThreadRetractionTests {
    /// Showing: two messages of conversation `c-1` (one by `aps.thread-id`, one
    /// by its custom data), one of `c-2`, one of no conversation.
    func center() throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(delivered: [
            DeliveredNotification(
                identifier: "m1",
                userInfo: try userInfo(
                    #"{"aps": {"alert": "hi", "thread-id": "c-1"}, "notificationCustomData": {"pushNotificationReferenceId": "m1"}}"#)),
            DeliveredNotification(
                identifier: "uuid-2",
                userInfo: try userInfo(
                    #"{"aps": {"alert": "yes"}, "notificationCustomData": {"pushNotificationReferenceId": "m2", "pushNotificationThreadId": "c-1"}}"#
                )),
            DeliveredNotification(
                identifier: "m3",
                userInfo: try userInfo(
                    #"{"aps": {"alert": "other", "thread-id": "c-2"}, "notificationCustomData": {"pushNotificationReferenceId": "m3"}}"#)),
            DeliveredNotification(identifier: "uuid-4", userInfo: try userInfo(#"{"aps": {"alert": "loose"}}"#)),
        ])
    }

    static let threadRetraction = #"""
        {"aps": {"content-available": 1},
         "notificationCustomData": {"pushNotificationThreadIds": ["c-1"], "isReferredNotificationMustRemoved": true}}
        """#

    @Test func aThreadRetractionRemovesEveryMessageOfTheConversationAndNothingElse() async throws {
        let center = try center()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let report = await RetractionHandler(center: center, tombstones: tombstones).handle(
            RetractPayload.read(try userInfo(Self.threadRetraction)))
        #expect(report == RetractionReport(outcome: .removed(["m1", "uuid-2"]), threads: ["c-1"]))
        #expect(center.delivered.map(\.identifier) == ["m3", "uuid-4"])
        // The conversation goes on: its next messages must show, so no tombstone.
        #expect(tombstones.references.isEmpty)
    }

    @Test func aRetractionOfThreadsAloneIsARetraction() throws {
        let reading = RetractPayload.read(try userInfo(Self.threadRetraction))
        #expect(reading.retraction == [])
        #expect(reading.retractedThreads == ["c-1"])
        #expect(reading.customData?.threadIDs == ["c-1"])
        // Without the flag it is not one.
        let unflagged = RetractPayload.read(try userInfo(#"{"notificationCustomData": {"pushNotificationThreadIds": ["c-1"]}}"#))
        #expect(unflagged.retraction == nil)
        #expect(unflagged.retractedThreads.isEmpty)
    }

    /// A server that retracts by copying the original's custom data and
    /// setting the flag: the original's own thread is not retracted with it.
    @Test func anOriginalsOwnThreadIsNotARetractionOfTheConversation() async throws {
        let center = try center()
        let copied = try userInfo(
            #"{"notificationCustomData": {"pushNotificationReferenceId": "m2", "pushNotificationThreadId": "c-1", "isReferredNotificationMustRemoved": true}}"#
        )
        let reading = RetractPayload.read(copied)
        #expect(reading.retraction == ["m2"])
        #expect(reading.retractedThreads.isEmpty)
        #expect(reading.customData?.threadID == "c-1")
        #expect(await RetractionHandler(center: center).handle(reading).outcome == .removed(["uuid-2"]))
    }

    @Test(arguments: [
        (#"["c-1", 42]"#, ["c-1", "42"], [String]()),
        (#""c-1""#, ["c-1"], []),
        ("42", ["42"], []),
        (#""[\"c-1\", 7]""#, ["c-1", "7"], []),
        (#"["c-1", "", {"x": 1}, "c-1"]"#, ["c-1"], ["[1]", "[2]"]),
        (#""""#, [], [""]),
        ("null", [], []),
    ])
    func threadIDsAreReadAsReferencesAre(written: String, threads: [String], problems: [String]) throws {
        let reading = RetractPayload.read(
            try userInfo(
                #"{"notificationCustomData": {"pushNotificationThreadIds": \#(written), "isReferredNotificationMustRemoved": true}}"#))
        #expect(reading.customData?.threadIDs == threads)
        #expect(reading.diagnostics.map(\.key) == problems.map { Optional("notificationCustomData.pushNotificationThreadIds" + $0) })
    }

    @Test func flatFCMDataCarriesThreadsToo() throws {
        // FCM data values are strings: the list comes as JSON text.
        let reading = RetractPayload.read([
            "pushNotificationThreadIds": #"["c-1"]"#, "isReferredNotificationMustRemoved": "true",
        ])
        #expect(reading.retractedThreads == ["c-1"])
    }

    @Test func theRequestsThreadIdentifierCounts() {
        // On a device the request content's threadIdentifier is read; aps.thread-id when there is none.
        let delivered = DeliveredNotification(identifier: "x", userInfo: [:], threadIdentifier: "c-9")
        #expect(delivered.threadIDs == ["c-9"])
        #expect(delivered.isRetracted(by: [], threads: ["c-9"]))
        #expect(!delivered.isRetracted(by: [], threads: ["c-1"]))
        #expect(!DeliveredNotification(identifier: "x", userInfo: [:], threadIdentifier: "").isRetracted(by: [], threads: [""]))
    }

    @Test func aServiceExtensionCarrierOfAThreadRemovesTheConversation() async throws {
        let center = try center()
        let service = RetractionServiceExtension(
            center: center, tombstones: Tombstones(storage: InMemoryTombstoneStorage()), hasFilteringEntitlement: true)
        let carrier = try userInfo(
            #"{"aps": {"alert": {"body": "This message was deleted"}, "mutable-content": 1}, "notificationCustomData": {"pushNotificationThreadIds": ["c-1"], "isReferredNotificationMustRemoved": true}}"#
        )
        #expect(await service.decide(identifier: "carrier", userInfo: carrier) == .suppress)
        #expect(center.delivered.map(\.identifier) == ["m3", "uuid-4"])
    }

    @Test func customDataWithThreadsRoundTripsThroughCodable() throws {
        let data = NotificationCustomData(referenceIDs: ["m1"], mustRemoveReferred: true, threadIDs: ["c-1", "c-2"])
        let json = try JSONEncoder().encode(data)
        #expect(try JSONDecoder().decode(NotificationCustomData.self, from: json) == data)
        #expect(String(decoding: json, as: UTF8.self).contains(#""pushNotificationThreadIds":["c-1","c-2"]"#))
    }
}
