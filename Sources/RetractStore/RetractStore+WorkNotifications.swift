import Foundation
import PostgresNIO
import RetractModel

extension RetractStore {
    /// The channel the ledger notifies when work becomes due now (migration 0008).
    static let workChannel = "retract_work"
    /// The channel a new retraction notifies with its app and place in the
    /// device feed, `"<app id> <created_xid>"`, a change to API keys with
    /// `"keys"` (migration 0017), and a server's tick with `"tick <server> <number>"`.
    static let feedChannel = "retract_feed"

    /// Listens for work becoming due, calling `wake` for each notification,
    /// and once as soon as it listens, for work made while it was not; and
    /// `cancelled` with the id of each retraction cancelled (`"cancel <id>"`).
    /// Holds one pooled connection until the task is cancelled, and returns then.
    ///
    /// - Throws: when the connection is lost or cannot be had; the caller
    ///   listens again after a pause, and polls meanwhile.
    package func listenForWork(
        _ wake: @escaping @Sendable () -> Void, cancelled: @escaping @Sendable (UUID) -> Void
    ) async throws(StoreError) {
        try await listen(on: Self.workChannel, during: "listening for new work", listening: wake) { payload in
            if payload.hasPrefix(Self.cancelNotice), let id = UUID(uuidString: String(payload.dropFirst(Self.cancelNotice.count))) {
                cancelled(id)
            } else {
                wake()
            }
        }
    }

    /// What a cancel says on the work channel, before the retraction's id.
    static let cancelNotice = "cancel "

    /// What the device feed's channel says.
    package enum FeedNotification: Hashable, Sendable {
        /// A retraction of the app committed, with its place (`created_xid`)
        /// and the digests (``DeviceDigest``) of the devices it took, some of
        /// them (a retraction of many notifies several times); nil for any of
        /// the app's devices.
        case retraction(appID: Int64, xid: UInt64, devices: [UInt64]?)
        /// An API key was revoked or changed.
        case keys
        /// A server's tick (``notifyFeedTick(server:number:)``): every
        /// notification of a transaction that committed before it was sent
        /// came before it.
        case tick(server: UUID, number: UInt64)
        /// A payload this version cannot read: whatever it said is unknown.
        case unreadable
    }

    /// Listens on the device feed's channel: `listening` once it listens,
    /// then `notified` with each notification, when its transaction
    /// commits. Holds one pooled connection until the task is cancelled,
    /// and returns then.
    ///
    /// - Throws: when the connection is lost or cannot be had; what the
    ///   caller knew from the notifications is then out of date.
    package func listenForFeed(
        listening: @escaping @Sendable () -> Void, notified: @escaping @Sendable (FeedNotification) -> Void
    ) async throws(StoreError) {
        try await listen(on: Self.feedChannel, during: "listening for new retractions", listening: listening) { payload in
            notified(Self.feedNotification(payload))
        }
    }

    /// Notifies the device feed's channel with a tick of `server`'s, in a
    /// transaction of its own, on ``healthClient``'s connection (a busy pool
    /// would hold it up). PostgreSQL delivers notifications in the order
    /// their transactions commit: a listener that hears the tick has heard
    /// every retraction that committed before it was sent.
    package func notifyFeedTick(server: UUID, number: UInt64) async throws(StoreError) {
        let payload = "tick \(server.uuidString.lowercased()) \(number)"
        try await perform("ticking the device feed's channel", idempotent: true) { [self] in
            _ = try await healthClient.query("SELECT pg_notify(\(Self.feedChannel), \(payload))::text", logger: logger).collect()
        }
    }

    /// `"keys"`, `"tick <server> <number>"`, or `"<app id> <created_xid>
    /// <digest>,<digest>,…"` with each digest 16 hex digits, or `"*"` for all
    /// the devices. Digests that cannot be read count as all the devices.
    package static func feedNotification(_ payload: String) -> FeedNotification {
        if payload == "keys" { return .keys }
        let parts = payload.split(separator: " ", omittingEmptySubsequences: false)
        if parts.count == 3, parts[0] == "tick" {
            guard let server = UUID(uuidString: String(parts[1])), let number = UInt64(parts[2]) else { return .unreadable }
            return .tick(server: server, number: number)
        }
        guard parts.count == 3, let app = Int64(parts[0]), let xid = UInt64(parts[1]) else { return .unreadable }
        var devices: [UInt64] = []
        for digest in parts[2].split(separator: ",", omittingEmptySubsequences: false) {
            guard digest.utf8.count == 16, let value = UInt64(digest, radix: 16) else {
                return .retraction(appID: app, xid: xid, devices: nil)
            }
            devices.append(value)
        }
        return .retraction(appID: app, xid: xid, devices: devices)
    }

    func listen(
        on channel: String, during operation: String, listening: @escaping @Sendable () -> Void,
        _ each: @escaping @Sendable (String) -> Void
    ) async throws(StoreError) {
        do {
            try await client.withConnection { connection in
                try await connection.listen(on: channel) { notifications in
                    listening()
                    for try await notification in notifications { each(notification.payload) }
                }
            }
        } catch {
            if Task.isCancelled { return }
            throw StoreError.from(error, during: operation)
        }
    }
}
