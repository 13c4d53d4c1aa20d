import Foundation

/// A device's place in the retraction feed: its push token, which the app
/// saves when it registers for pushes, and the cursor of the last catch-up.
/// Kept in storage the app and its Notification Service Extension share (an
/// App Group), so that the extension, which never sees the token itself, can
/// read the feed, and so that neither reads again what the other removed.
///
/// ```swift
/// // in the app, application(_:didRegisterForRemoteNotificationsWithDeviceToken:)
/// try FeedCursor(appGroup: "group.com.example.chat").save(token: DeviceToken(deviceToken))
/// ```
public final class FeedCursor: @unchecked Sendable {
    // @unchecked: `storage` is Sendable and immutable; `lock` makes each
    // read-modify-write of it atomic within this process.

    /// The `UserDefaults` key ``init(appGroup:)`` keeps the token and cursor under.
    public static let defaultKey = "RetractKit.feedCursor"

    /// What is saved: a few hundred bytes of JSON.
    struct Position: Codable, Hashable, Sendable {
        var device: RetractionFeed.Device
        /// Nil until the first catch-up.
        var cursor: String?
        /// The validator of the last page read from `cursor`, when it listed
        /// nothing; nil otherwise, and in what RetractKit 0.2 saved.
        var validator: String?
    }

    private let storage: any TombstoneStorage
    private let lock = NSLock()

    /// - Parameter storage: any byte storage; give it a key of its own, not
    ///   the tombstones' (``UserDefaultsTombstoneStorage``
    ///   with ``defaultKey``), or each would overwrite the other.
    public init(storage: some TombstoneStorage) {
        self.storage = storage
    }

    /// In the App Group's `UserDefaults`, under ``defaultKey``.
    public convenience init(appGroup: AppGroup) {
        self.init(storage: UserDefaultsTombstoneStorage(appGroup: appGroup, key: Self.defaultKey))
    }

    /// In the App Group's `UserDefaults`, under ``defaultKey``, once the
    /// group is known to be in this target's entitlements
    /// (``AppGroup/init(_:)``): a group missing from them throws, rather
    /// than leaving the app and its extension each a cursor of its own.
    public convenience init(appGroup identifier: String) throws(AppGroupError) {
        self.init(appGroup: try AppGroup(identifier))
    }

    /// Saves the APNs token the app registered with. A token other than the
    /// one saved starts the feed again from the beginning, since the cursor
    /// belongs to the old one.
    public func save(token: DeviceToken) throws {
        try save(RetractionFeed.Device(token))
    }

    /// Saves the FCM registration token, for an app whose pushes come through Firebase.
    public func save(fcmToken: String) throws {
        try save(RetractionFeed.Device(fcmToken: fcmToken))
    }

    /// The cursor the next catch-up reads from; nil before the first one, or
    /// when no token is saved.
    public var cursor: String? { position?.cursor }

    /// Whether the app has saved a token.
    public var hasToken: Bool { position != nil }

    /// The saved token and cursor; unreadable storage counts as nothing saved.
    var position: Position? {
        guard let data = try? storage.load() else { return nil }
        return try? JSONDecoder().decode(Position.self, from: data)
    }

    /// Moves the cursor, with the validator to send from it, unless the app
    /// saved another token meanwhile.
    func advance(to cursor: String, validator: String? = nil, for device: RetractionFeed.Device) throws {
        try lock.locked {
            guard position?.device == device else { return }
            try storage.save(JSONEncoder().encode(Position(device: device, cursor: cursor, validator: validator)))
        }
    }

    private func save(_ device: RetractionFeed.Device) throws {
        try lock.locked {
            guard position?.device != device else { return }
            try storage.save(JSONEncoder().encode(Position(device: device, cursor: nil)))
        }
    }
}
