// tvOS's UNNotificationContent has no userInfo (and tvOS is not a platform RetractKit declares).
#if canImport(UserNotifications) && !os(tvOS)
import UserNotifications

extension Tombstones {
    /// For `UNNotificationServiceExtension.didReceive(_:withContentHandler:)`:
    /// whether `request` was retracted before it arrived.
    public func wasRetracted(_ request: UNNotificationRequest) -> Bool {
        wasRetracted(identifier: request.identifier, userInfo: request.content.userInfo)
    }
}
#endif
