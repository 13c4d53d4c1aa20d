import Dispatch
import Foundation

/// A Notification Center in memory, for tests and tools.
///
/// Delivering a notification with an identifier already showing replaces it,
/// as iOS does.
public final class InMemoryNotificationCenter: DeliveredNotificationCenter, @unchecked Sendable {
    // @unchecked: every access to `notifications`, `pending` and `hasEnded`
    // holds `lock`. (Mutex needs iOS 18.)

    /// When a removal takes effect.
    public enum Removal: Hashable, Sendable {
        /// Before `removeDeliveredNotifications(withIdentifiers:)` returns.
        case immediate
        /// This many seconds later, on another queue, as iOS does it: Apple
        /// documents the removal as running asynchronously on a secondary
        /// thread, with no completion. What is still to be removed when the
        /// process ends (``endProcess()``) never is.
        case deferred(seconds: TimeInterval)
    }

    private let lock = NSLock()
    private let removal: Removal
    private var notifications: [DeliveredNotification]
    /// Removals asked for and not applied yet, by the order they were asked in.
    private var pending: [Int: Set<String>] = [:]
    private var nextRemoval = 0
    private var hasEnded = false

    public init(delivered: [DeliveredNotification] = [], removal: Removal = .immediate) {
        self.removal = removal
        notifications = []
        for notification in delivered { deliver(notification) }
    }

    /// What is showing, oldest first.
    public var delivered: [DeliveredNotification] {
        lock.locked { notifications }
    }

    /// How many removals were asked for and have not taken effect.
    public var pendingRemovals: Int {
        lock.locked { pending.count }
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
        switch removal {
        case .immediate:
            lock.locked { if !hasEnded { apply(removed) } }
        case .deferred(let seconds):
            let number: Int? = lock.locked {
                guard !hasEnded else { return nil }
                defer { nextRemoval += 1 }
                pending[nextRemoval] = removed
                return nextRemoval
            }
            guard let number else { return }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { [self] in
                lock.locked {
                    guard let removed = pending.removeValue(forKey: number) else { return }
                    apply(removed)
                }
            }
        }
    }

    /// Shows the new text in the notification's place, as the newest, as iOS
    /// does when a request comes with a delivered notification's identifier.
    public func replaceText(ofDelivered identifier: String, title: String?, body: String) async -> Bool {
        lock.locked {
            guard !hasEnded, let index = notifications.firstIndex(where: { $0.identifier == identifier }) else { return false }
            var notification = notifications.remove(at: index)
            if let title { notification.title = title }
            notification.body = body
            notifications.append(notification)
            return true
        }
    }

    /// The process that asked for removals ends, as iOS ends an extension
    /// soon after it calls its content handler: removals not yet applied
    /// never are, and later ones are ignored. What is showing stays.
    public func endProcess() {
        lock.locked {
            hasEnded = true
            pending.removeAll()
        }
    }

    /// Holds `lock`.
    private func apply(_ removed: Set<String>) {
        notifications.removeAll { removed.contains($0.identifier) }
    }
}
