import Foundation

/// A Notification Center in memory, for tests and tools.
///
/// Delivering a notification with an identifier already showing replaces it,
/// as iOS does.
public final class InMemoryNotificationCenter: DeliveredNotificationCenter, @unchecked Sendable {
    // @unchecked: every access to `notifications` holds `lock`. (Mutex needs iOS 18.)
    private let lock = NSLock()
    private var notifications: [DeliveredNotification]

    public init(delivered: [DeliveredNotification] = []) {
        notifications = []
        for notification in delivered { deliver(notification) }
    }

    /// What is showing, oldest first.
    public var delivered: [DeliveredNotification] {
        lock.locked { notifications }
    }

    public func deliver(_ notification: DeliveredNotification) {
        lock.locked {
            notifications.removeAll { $0.identifier == notification.identifier }
            notifications.append(notification)
        }
    }

    public func deliveredNotifications() async -> [DeliveredNotification] {
        delivered
    }

    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        let removed = Set(identifiers)
        lock.locked { notifications.removeAll { removed.contains($0.identifier) } }
    }
}
