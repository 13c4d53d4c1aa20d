import Foundation

/// Where ``Tombstones`` keeps its list: a few kilobytes of JSON.
public protocol TombstoneStorage: Sendable {
    /// The saved bytes, or nil when nothing was saved yet.
    func load() throws -> Data?
    func save(_ data: Data) throws
}

/// Keeps tombstones for the life of the process.
public final class InMemoryTombstoneStorage: TombstoneStorage, @unchecked Sendable {
    // @unchecked: `data` is only touched while holding `lock`.
    private let lock = NSLock()
    private var data: Data?

    public init() {}

    public func load() -> Data? { lock.locked { data } }
    public func save(_ data: Data) { lock.locked { self.data = data } }
}

/// Keeps tombstones in a file, written atomically.
public struct FileTombstoneStorage: TombstoneStorage {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    public func load() throws -> Data? {
        do {
            return try Data(contentsOf: url)
        } catch CocoaError.fileReadNoSuchFile {
            return nil
        }
    }

    public func save(_ data: Data) throws {
        try data.write(to: url, options: .atomic)
    }
}

/// Keeps tombstones in `UserDefaults`; in an App Group's, the app and its
/// Notification Service Extension share them.
public struct UserDefaultsTombstoneStorage: TombstoneStorage {
    public static let defaultKey = "RetractKit.tombstones"

    public let suiteName: String?
    public let key: String

    /// In the App Group's `UserDefaults`, which the app and its extension
    /// share.
    public init(appGroup: AppGroup, key: String = UserDefaultsTombstoneStorage.defaultKey) {
        self.suiteName = appGroup.identifier
        self.key = key
    }

    /// In the App Group's `UserDefaults`, once the group is known to be in
    /// this target's entitlements (``AppGroup/init(_:)``).
    public init(appGroup identifier: String, key: String = UserDefaultsTombstoneStorage.defaultKey) throws(AppGroupError) {
        self.init(appGroup: try AppGroup(identifier), key: key)
    }

    /// In a suite that is not an App Group, such as the app's own (`nil`);
    /// nil when `UserDefaults` refuses the name (the app's bundle identifier,
    /// or `NSGlobalDomain`). For an App Group, use an `init(appGroup:)`: this
    /// one cannot tell a missing group, for which `UserDefaults` hands back a
    /// store private to the process.
    public init?(suiteName: String?, key: String = UserDefaultsTombstoneStorage.defaultKey) {
        guard UserDefaults(suiteName: suiteName) != nil else { return nil }
        self.suiteName = suiteName
        self.key = key
    }

    public func load() throws -> Data? {
        try defaults().data(forKey: key)
    }

    public func save(_ data: Data) throws {
        try defaults().set(data, forKey: key)
    }

    // UserDefaults is not Sendable on every platform; opening the suite per
    // call is cheap, as Foundation caches it.
    private func defaults() throws(AppGroupError) -> UserDefaults {
        guard let defaults = UserDefaults(suiteName: suiteName) else {
            throw AppGroupError(identifier: suiteName ?? "", problem: .refusedSuiteName)
        }
        return defaults
    }
}
