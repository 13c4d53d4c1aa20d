import Foundation

/// Remembers recently retracted references, so that an original arriving after
/// its retraction (APNs delivers in no guaranteed order, and holds pushes for
/// offline devices) can be recognised and dropped.
///
/// The app records through ``RetractionHandler``; a Notification Service
/// Extension asks ``wasRetracted(identifier:userInfo:)``. Both processes read
/// and write the same storage (a shared app group); each call reads it afresh.
public final class Tombstones: @unchecked Sendable {
    // @unchecked: the stored properties are immutable and Sendable but for
    // `lock`, which makes each read-modify-write of the storage atomic within
    // this process.
    public static let defaultLimit = 256
    public static let defaultLifetime: TimeInterval = 7 * 24 * 60 * 60

    private let storage: any TombstoneStorage
    private let limit: Int
    private let lifetime: TimeInterval
    private let now: @Sendable () -> Date
    private let lock = NSLock()

    /// - Parameters:
    ///   - limit: how many references are kept; the oldest go first.
    ///   - lifetime: how long a reference is kept after its retraction.
    ///   - now: the clock, replaceable in tests.
    public init(
        storage: some TombstoneStorage,
        limit: Int = Tombstones.defaultLimit,
        lifetime: TimeInterval = Tombstones.defaultLifetime,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.storage = storage
        self.limit = limit
        self.lifetime = lifetime
        self.now = now
    }

    /// Remembers `references` of `account` (nil: the app's only account) as retracted now.
    public func record(_ references: Set<ReferenceID>, account: String? = nil) throws {
        try lock.locked {
            var list = load()
            list.insert(references, account: account, at: now(), limit: limit, lifetime: lifetime)
            try storage.save(JSONEncoder().encode(list))
        }
    }

    /// Whether `reference` of `account` was retracted within the lifetime.
    public func contains(_ reference: ReferenceID, account: String? = nil) -> Bool {
        lock.locked { load().contains(reference, account: account, now: now(), lifetime: lifetime) }
    }

    /// The references remembered now, oldest first, whatever their account.
    public var references: [ReferenceID] {
        lock.locked {
            var list = load()
            list.prune(now: now(), limit: limit, lifetime: lifetime)
            return list.entries.map(\.reference)
        }
    }

    /// What is remembered now, by account.
    public var retracted: RetractedReferences {
        lock.locked { load().retracted(now: now(), lifetime: lifetime) }
    }

    /// For a Notification Service Extension: whether an arriving notification
    /// was retracted before it arrived, by any of its references or its
    /// identifier, within its account.
    public func wasRetracted(identifier: String, userInfo: [AnyHashable: Any]) -> Bool {
        wasRetracted(DeliveredNotification(identifier: identifier, userInfo: userInfo))
    }

    func wasRetracted(_ notification: DeliveredNotification) -> Bool {
        retracted.names(notification)
    }

    /// Unreadable storage counts as empty: tombstones are an optimisation, and
    /// the next record overwrites it.
    private func load() -> TombstoneList {
        guard let data = try? storage.load() else { return TombstoneList() }
        return (try? JSONDecoder().decode(TombstoneList.self, from: data)) ?? TombstoneList()
    }
}
