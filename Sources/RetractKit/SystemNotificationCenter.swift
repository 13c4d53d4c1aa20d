#if canImport(UserNotifications) && !os(tvOS)
import UserNotifications

/// `UNUserNotificationCenter.current()` as a ``DeliveredNotificationCenter``.
///
/// Kept thin on purpose: all matching happens in platform-independent code.
public struct SystemNotificationCenter: DeliveredNotificationCenter {
    public init() {}

    public func deliveredNotifications() async -> [DeliveredNotification] {
        await withCheckedContinuation { continuation in
            UNUserNotificationCenter.current().getDeliveredNotifications { notifications in
                continuation.resume(
                    returning: notifications.map {
                        DeliveredNotification(
                            identifier: $0.request.identifier, userInfo: $0.request.content.userInfo,
                            threadIdentifier: $0.request.content.threadIdentifier)
                    }
                )
            }
        }
    }

    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        UNUserNotificationCenter.current().removeDeliveredNotifications(withIdentifiers: identifiers)
    }
}
#endif
