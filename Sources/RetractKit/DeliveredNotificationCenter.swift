/// What ``RetractionHandler`` needs from Notification Center.
///
/// On Apple platforms ``SystemNotificationCenter`` wraps
/// `UNUserNotificationCenter`; ``InMemoryNotificationCenter`` stands in for it
/// in tests and tools.
public protocol DeliveredNotificationCenter: Sendable {
    func deliveredNotifications() async -> [DeliveredNotification]
    func removeDeliveredNotifications(withIdentifiers identifiers: [String])
    /// Shows `body`, and `title` unless it is nil, in the delivered
    /// notification `identifier`, in its place and silently: an edit.
    ///
    /// - Returns: whether it was still showing and now shows the new text.
    func replaceText(ofDelivered identifier: String, title: String?, body: String) async -> Bool
}

extension DeliveredNotificationCenter {
    /// A center that cannot change what a notification shows edits nothing:
    /// the notification keeps its text (it is not removed either).
    public func replaceText(ofDelivered identifier: String, title: String?, body: String) async -> Bool { false }
}
