import Foundation
import RetractKit
import Testing

/// A clock the test moves by hand.
final class TestClock: @unchecked Sendable {
    // @unchecked: tests move the clock from one task at a time.
    var now = Date(timeIntervalSince1970: 1_700_000_000)

    func advance(_ seconds: TimeInterval) { now += seconds }
}

@Suite("Tombstones")
struct TombstoneTests {
    @Test func keepsAtMostLimitReferencesDroppingTheOldest() throws {
        let clock = TestClock()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage(), limit: 3, now: { clock.now })
        for reference in ["a", "b", "c", "d"] as [ReferenceID] {
            try tombstones.record([reference])
            clock.advance(1)
        }
        #expect(tombstones.references == ["b", "c", "d"])
        #expect(!tombstones.contains("a"))

        // Retracting a remembered reference again makes it the newest.
        try tombstones.record(["b"])
        try tombstones.record(["e"])
        #expect(tombstones.references == ["d", "b", "e"])
    }

    @Test func referencesExpireAfterTheirLifetime() throws {
        let clock = TestClock()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage(), lifetime: 60, now: { clock.now })
        try tombstones.record(["old"])
        clock.advance(30)
        try tombstones.record(["new"])
        clock.advance(29.5)
        #expect(tombstones.contains("old"))
        clock.advance(0.5)
        #expect(!tombstones.contains("old"))
        #expect(tombstones.references == ["new"])
        clock.advance(30)
        #expect(tombstones.references.isEmpty)
    }

    @Test func serviceExtensionHelperRecognisesALateOriginal() throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["msg-1", 233, "collapse-7"])
        #expect(
            tombstones.wasRetracted(
                identifier: "uuid", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "msg-1"}}"#)))
        #expect(
            tombstones.wasRetracted(
                identifier: "uuid", userInfo: try userInfo(#"{"notifcationCustomData": {"pushNotificationReferanceId": 233}}"#)))
        #expect(tombstones.wasRetracted(identifier: "collapse-7", userInfo: [:]))
        #expect(
            !tombstones.wasRetracted(
                identifier: "uuid", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "msg-2"}}"#)))
        #expect(!tombstones.wasRetracted(identifier: "uuid", userInfo: try userInfo(#"{"notificationCustomData": 7}"#)))
    }

    @Test func fileStorageSurvivesANewInstance() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tombstones-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Tombstones(storage: FileTombstoneStorage(url: url)).record(["msg-1"])
        #expect(Tombstones(storage: FileTombstoneStorage(url: url)).contains("msg-1"))
        #expect(try FileTombstoneStorage(url: url.appendingPathExtension("missing")).load() == nil)
    }

    @Test func fileStorageThatCannotBeWrittenThrows() {
        let url = URL(fileURLWithPath: "/nonexistent-dir-\(UUID().uuidString)/tombstones.json")
        #expect(throws: (any Error).self) { try Tombstones(storage: FileTombstoneStorage(url: url)).record(["a"]) }
    }

    @Test func unreadableStorageCountsAsEmpty() throws {
        let storage = InMemoryTombstoneStorage()
        storage.save(Data("not json".utf8))
        let tombstones = Tombstones(storage: storage)
        #expect(tombstones.references.isEmpty)
        try tombstones.record(["a"])
        #expect(tombstones.references == ["a"])
    }

    @Test func userDefaultsStorageSharesASuite() throws {
        let suite = "RetractKitTests.\(UUID().uuidString)"
        defer { UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite) }
        let writer = Tombstones(storage: try #require(UserDefaultsTombstoneStorage(suiteName: suite)))
        try writer.record(["msg-1"])
        let reader = Tombstones(storage: try #require(UserDefaultsTombstoneStorage(suiteName: suite)))
        #expect(reader.contains("msg-1"))
    }
}
