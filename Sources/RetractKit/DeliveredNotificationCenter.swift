/// What ``RetractionHandler`` needs from Notification Center.
///
/// On Apple platforms ``SystemNotificationCenter`` wraps
/// `UNUserNotificationCenter`; ``InMemoryNotificationCenter`` stands in for it
/// in tests and tools.
public protocol DeliveredNotificationCenter: Sendable {
    func deliveredNotifications() async -> [DeliveredNotification]
    func removeDeliveredNotifications(withIdentifiers identifiers: [String])
}
