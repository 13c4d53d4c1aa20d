/// How an Android phone shows an original sent through FCM.
package enum AndroidDisplay: String, Sendable, Hashable, Codable, CaseIterable {
    /// Firebase shows it itself (`android.notification`) while the app is in
    /// the background, tagged so RetractKit for Android finds it by its
    /// reference: the tag is the original's collapse id, which is the
    /// reference unless the sender gave one of its own.
    case firebase
    /// A data message only, with the alert's title and body in `data`
    /// (`title`, `body`): the app builds the notification itself (to group it
    /// by conversation, say), and RetractKit for Android posts it under the
    /// same tag. High priority, and it results in a notification, so
    /// Firebase does not lower it.
    case app

    /// Why `text` is not a display, for error messages.
    package static func problem(_ text: String) -> String {
        "\"\(text.prefix(40))\" is not an Android display: firebase (Firebase shows it) or app (a data message the app shows)"
    }
}
