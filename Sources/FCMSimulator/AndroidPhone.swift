import Foundation

/// An Android phone, as FCM and Android treat the messages for one app on it:
/// which reach the screen by themselves, which reach the app, which wait and
/// which are never delivered. The app itself is RetractKit for Android, run
/// as a process (``AndroidReplay``); this is only what happens before it.
public struct AndroidPhone: Sendable, Hashable {
    /// When the user force-stopped the app (Settings, or swiping it away on
    /// some makers' phones), or nil: from then on FCM delivers nothing to
    /// it, neither notifications nor data, until the user opens it again.
    /// Before, the app is in the background: Firebase shows a notification
    /// message itself (`android.notification`, with its tag) and hands data
    /// messages to the app's `onMessageReceived`.
    public var forceStoppedSince: Date?
    /// In Doze: normal-priority messages wait for the next maintenance
    /// window, which has not come by the time the screen is looked at; high
    /// priority ones are delivered at once.
    public var dozing: Bool
    /// Firebase has lowered this app's high-priority data messages to normal
    /// priority on this phone, as it may for an app whose high-priority
    /// messages do not result in a notification the user sees
    /// ("message-priority" in Firebase's Android docs): every retraction is
    /// such a message. One that carries an alert's `title` or `body` (an
    /// original for the app to show) is taken to be shown, and keeps its
    /// priority: the simulator cannot see what the app does with it.
    public var priorityLowered: Bool

    public init(forceStoppedSince: Date? = nil, dozing: Bool = false, priorityLowered: Bool = false) {
        self.forceStoppedSince = forceStoppedSince
        self.dozing = dozing
        self.priorityLowered = priorityLowered
    }

    /// What reaches the phone of one message.
    public enum Event: Sendable, Hashable {
        /// Firebase showed a notification message itself, under `tag`
        /// (Firebase's own `FCM-Notification:<n>` when the message gave none),
        /// id 0, on its default channel, with its title and body: no app
        /// code ran, and none of the data is in the notification's extras.
        case display(tag: String, title: String? = nil, body: String? = nil)
        /// Android handed the message's data map to the app's `onMessageReceived`.
        case data([String: String])
        /// The user opened the app: it reads the device feed, as RetractKit
        /// for Android's integration does at every start (``AndroidReplay/Feed``).
        case appStart
    }

    /// Where each message went.
    public struct Delivery: Sendable, Hashable {
        public var events: [Event] = []
        /// Messages FCM did not deliver: the app is force-stopped.
        public var undelivered = 0
        /// Messages Doze holds: normal priority (or lowered to it) while dozing.
        public var deferred = 0
    }

    /// The channel Firebase shows its notifications on when the message names none.
    public static let firebaseDefaultChannel = "fcm_fallback_notification_channel"

    /// What of `messages`, in the order FCM accepted them, reaches the phone and its app.
    public func delivery(of messages: [FCMReceivedMessage]) -> Delivery {
        var delivery = Delivery()
        for (index, message) in messages.enumerated() {
            if let forceStoppedSince, message.receivedAt >= forceStoppedSince {
                delivery.undelivered += 1
                continue
            }
            let notification = message.androidNotification
            // FCM's defaults: notification messages high, data messages normal.
            var high = (message.androidPriority ?? (notification == nil ? "NORMAL" : "HIGH")) == "HIGH"
            let shown = message.data["title"] != nil || message.data["body"] != nil
            if priorityLowered, notification == nil, !shown { high = false }
            if dozing, !high {
                delivery.deferred += 1
                continue
            }
            if let notification {
                delivery.events.append(
                    .display(
                        tag: notification["tag"] ?? "FCM-Notification:\(index)", title: notification["title"], body: notification["body"]))
            } else {
                delivery.events.append(.data(message.data))
            }
        }
        return delivery
    }
}
