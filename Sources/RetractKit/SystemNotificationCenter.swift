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
                            threadIdentifier: $0.request.content.threadIdentifier, title: $0.request.content.title,
                            body: $0.request.content.body)
                    }
                )
            }
        }
    }

    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        UNUserNotificationCenter.current().removeDeliveredNotifications(withIdentifiers: identifiers)
    }

    /// Adds a request with the delivered notification's identifier and a
    /// copy of its content (its thread, category and custom data, so a later
    /// retraction still finds it) with the new text: iOS puts it in the
    /// notification's place. Without sound, and passive (ranked last) from
    /// iOS 15: an edit does not light the screen or alert again.
    public func replaceText(ofDelivered identifier: String, title: String?, body: String) async -> Bool {
        await withCheckedContinuation { continuation in
            UNUserNotificationCenter.current().getDeliveredNotifications { notifications in
                guard let shown = notifications.first(where: { $0.request.identifier == identifier }),
                    let content = shown.request.content.mutableCopy() as? UNMutableNotificationContent
                else {
                    continuation.resume(returning: false)
                    return
                }
                if let title { content.title = title }
                content.body = body
                content.sound = nil
                content.quiet()
                let request = UNNotificationRequest(identifier: identifier, content: content, trigger: nil)
                UNUserNotificationCenter.current().add(request) { error in continuation.resume(returning: error == nil) }
            }
        }
    }
}
#endif
