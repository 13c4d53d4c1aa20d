// tvOS shows no notification text, so it has nothing to quieten.
#if canImport(UserNotifications) && !os(tvOS)
import UserNotifications

extension UNMutableNotificationContent {
    /// No sound, and from iOS 15 passive and ranked last: what a deleted or
    /// edited message shows in its place never lights the screen or sounds
    /// as a new message would (an original's own sound would otherwise stay).
    func quiet() {
        sound = nil
        if #available(iOS 15.0, macOS 12.0, watchOS 8.0, *) {
            interruptionLevel = .passive
            relevanceScore = 0
        }
    }
}
#endif
