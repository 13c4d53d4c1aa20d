import Foundation
import RetractKit
import Testing

/// `UserDefaults(suiteName:)` hands a process a private store for an App
/// Group missing from its entitlements; storage made for an App Group must
/// say so instead.
@Suite("App Group")
struct AppGroupTests {
    /// A group no test process is entitled to: Linux has no App Groups, and
    /// on macOS its container does not exist.
    static let missing = "group.com.example.retractkit-tests-missing"

    @Test func aGroupMissingFromTheEntitlementsIsAnErrorThatSaysSo() throws {
        let error = try #require(throws: AppGroupError.self) { try AppGroup(Self.missing) }
        #expect(error.identifier == Self.missing)
        #expect(error.description.contains(Self.missing))
        #expect(throws: AppGroupError.self) { try FeedCursor(appGroup: Self.missing) }
        #expect(throws: AppGroupError.self) { try UserDefaultsTombstoneStorage(appGroup: Self.missing) }
    }

    @Test func aContainerThatDoesNotExistIsAnError() throws {
        let nowhere = FileManager.default.temporaryDirectory.appendingPathComponent("RetractKitTests-\(UUID().uuidString)")
        let error = try #require(throws: AppGroupError.self) { try AppGroup(identifier: "group.com.example.chat", containerURL: nowhere) }
        #expect(error.problem == .containerMissing(nowhere))
        #expect(error.description.contains("App Groups"))
    }

    @Test func theAppAndItsExtensionShareTombstonesAndTheCursorThroughOneGroup() throws {
        let container = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: container) }
        let identifier = "group.RetractKitTests.\(UUID().uuidString)"
        defer { UserDefaults(suiteName: identifier)?.removePersistentDomain(forName: identifier) }

        // Two processes, each with the group in its entitlements.
        let app = try AppGroup(identifier: identifier, containerURL: container)
        let appExtension = try AppGroup(identifier: identifier, containerURL: container)
        try Tombstones(storage: UserDefaultsTombstoneStorage(appGroup: app)).record(["m1"])
        try FeedCursor(appGroup: app).save(fcmToken: "fcm-token-1")

        #expect(Tombstones(storage: UserDefaultsTombstoneStorage(appGroup: appExtension)).contains("m1"))
        #expect(FeedCursor(appGroup: appExtension).hasToken)
    }

    func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("RetractKitTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
