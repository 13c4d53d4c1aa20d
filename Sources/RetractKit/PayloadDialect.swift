/// The spelling a payload uses for its custom data.
///
/// Decoding always accepts both; building writes the dialect an app is
/// configured with.
public enum PayloadDialect: String, Sendable, Hashable, Codable, CaseIterable {
    /// `notificationCustomData`, `pushNotificationReferenceId` (a string),
    /// `pushNotificationReferenceIds`, `isReferredNotificationMustRemoved`.
    case canonical
    /// The article's exact keys, for apps whose clients already run its code:
    /// `notifcationCustomData`, `pushNotificationReferanceId` (an integer),
    /// `isReferedNotificationMustRemoved`. Its clients read one reference per
    /// push, so a retraction carries one reference per body.
    case legacy

    /// The key next to `aps` that holds the custom data.
    public var customDataKey: String {
        switch self {
        case .canonical: "notificationCustomData"
        case .legacy: "notifcationCustomData"
        }
    }

    /// The key of the single reference inside the custom data.
    public var referenceIDKey: String {
        switch self {
        case .canonical: "pushNotificationReferenceId"
        case .legacy: "pushNotificationReferanceId"
        }
    }

    /// The key of the removal flag inside the custom data.
    public var mustRemoveKey: String {
        switch self {
        case .canonical: "isReferredNotificationMustRemoved"
        case .legacy: "isReferedNotificationMustRemoved"
        }
    }

    /// The key of a batch of references; only the canonical dialect has one.
    public static let referenceIDsKey = "pushNotificationReferenceIds"
    /// The key of an original's conversation (thread) in its custom data;
    /// only the canonical dialect has one. `aps.thread-id` says the same.
    public static let threadIDKey = "pushNotificationThreadId"
    /// The key of the conversations a retraction removes every notification
    /// of; only the canonical dialect has one.
    public static let threadIDsKey = "pushNotificationThreadIds"
    /// The key of a retraction's "the rest is in the device feed": the push
    /// could not carry everything the device should remove (its references
    /// needed several pushes, or earlier retractions did not fit), and an
    /// app that keeps only the latest push should read the feed. Only the
    /// canonical dialect has one.
    public static let moreInFeedKey = "pushNotificationMoreInFeed"
    /// The key of an edit: the new `title` and `body` of the notification of
    /// the push's references (``NotificationEdit``). Both dialects read it.
    public static let editKey = "pushNotificationEdit"
    /// The key of the account a notification, a retraction or an edit is of,
    /// where one app on a phone holds several (servers, workspaces, users):
    /// its references and threads are that account's. Absent means the
    /// app's only account. Both dialects read and write it.
    public static let accountKey = "pushNotificationAccount"

    /// The app icon's badge a read's push carries in its custom data, for
    /// the app to set (`setBadgeCount`): Apple's background pushes carry
    /// nothing but `content-available` in `aps`.
    public static let badgeKey = "pushNotificationBadge"
}
