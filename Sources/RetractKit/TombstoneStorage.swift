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

/// Keeps tombstones in `UserDefaults`; with an app group's suite name the app
/// and its Notification Service Extension share them.
public struct UserDefaultsTombstoneStorage: TombstoneStorage {
    public static let defaultKey = "RetractKit.tombstones"

    public let suiteName: String?
    public let key: String

    /// Nil when `UserDefaults` refuses the suite name (the app's own bundle
    /// identifier, or `NSGlobalDomain`).
    public init?(suiteName: String?, key: String = UserDefaultsTombstoneStorage.defaultKey) {
        guard UserDefaults(suiteName: suiteName) != nil else { return nil }
        self.suiteName = suiteName
        self.key = key
    }

    public func load() -> Data? {
        defaults?.data(forKey: key)
    }

    public func save(_ data: Data) {
        defaults?.set(data, forKey: key)
    }

    // UserDefaults is not Sendable on every platform; opening the suite per
    // call is cheap, as Foundation caches it.
    private var defaults: UserDefaults? { UserDefaults(suiteName: suiteName) }
}
