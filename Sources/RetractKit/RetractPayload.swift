import Foundation

/// Reads Retract's custom data out of a push's `userInfo`.
public enum RetractPayload {
    /// What a device reads out of one push.
    public struct Reading: Hashable, Sendable {
        /// The custom data, united across both custom data keys (or read from
        /// the top level of the push when it has neither); nil when the push
        /// carries none that could be read.
        public var customData: NotificationCustomData?
        /// The values that could not be read, each naming its key, in reading
        /// order. Everything else in the push was read without them.
        public var diagnostics: [RetractPayloadError]

        public init(customData: NotificationCustomData?, diagnostics: [RetractPayloadError] = []) {
            self.customData = customData
            self.diagnostics = diagnostics
        }

        /// The references to remove, or nil when the push is not a retraction:
        /// no removal flag set to an accepted true value, or neither a
        /// reference nor a thread. A retraction of threads alone has no
        /// references: see ``retractedThreads``.
        public var retraction: Set<ReferenceID>? {
            guard let customData, customData.mustRemoveReferred else { return nil }
            let references = Set(customData.references)
            return references.isEmpty && customData.threadIDs.isEmpty ? nil : references
        }

        /// The conversations whose every notification a retraction removes
        /// (`pushNotificationThreadIds`); empty when the push is not a
        /// retraction. An original's own `pushNotificationThreadId` is not one:
        /// a retraction that copies the original's custom data removes only
        /// the original.
        public var retractedThreads: Set<String> {
            guard retraction != nil, let customData else { return [] }
            return Set(customData.threadIDs)
        }

        /// The edit the push makes, or nil when it makes none: no readable
        /// `pushNotificationEdit`, no reference, or a retraction (removing
        /// wins: a deleted message is never shown again).
        public var edit: Edit? {
            guard retraction == nil, let customData, let edit = customData.edit else { return nil }
            let references = Set(customData.references)
            return references.isEmpty
                ? nil : Edit(references: references, title: edit.title, body: edit.body, account: customData.account)
        }

        /// The account the push's references and threads are of
        /// (`pushNotificationAccount`); nil: the app's only account.
        public var account: String? { customData?.account }

        /// The app icon's badge the push gives (a read's), for the app to set
        /// (`UNUserNotificationCenter.setBadgeCount`); nil: leave it.
        public var badge: Int? { customData?.badge }
    }

    /// What an edit push asks: show `title` and `body` instead of what the
    /// notifications of `references` of `account` show, where they still show.
    public struct Edit: Hashable, Sendable {
        public var references: Set<ReferenceID>
        /// The new title; nil keeps the one shown.
        public var title: String?
        public var body: String
        /// The account the references are of; nil: the app's only account.
        public var account: String?

        public init(references: Set<ReferenceID>, title: String?, body: String, account: String? = nil) {
            self.references = references
            self.title = title
            self.body = body
            self.account = account
        }
    }

    /// Reads a push leniently, as a device must: a value that cannot be read
    /// is dropped and reported in ``Reading/diagnostics``, and the rest of the
    /// push still counts.
    ///
    /// Custom data is read from `notificationCustomData` and the article's
    /// `notifcationCustomData` (an object, a JSON string or `Data`), both when
    /// both are present. A push with no readable custom data object is read at
    /// its top level, where FCM data messages and some servers put the keys.
    public static func read(_ userInfo: [AnyHashable: Any]) -> Reading {
        var reader = CustomDataReader()
        for key in PayloadDialect.allCases.map(\.customDataKey) {
            guard let value = userInfo[key], !(value is NSNull) else { continue }
            reader.read(userInfoValue: value, path: key)
        }
        // An FCM data map may carry a custom data key left empty next to flat keys.
        if !reader.foundObject, hasTopLevelKeys(userInfo) {
            reader.read(path: "") { key in userInfo[key].map { PayloadValue($0) } }
        }
        return Reading(customData: reader.foundObject ? reader.customData : nil, diagnostics: reader.diagnostics)
    }

    /// The custom data under `notificationCustomData` and `notifcationCustomData`
    /// (united when both are present), given as an object, a JSON string or
    /// `Data`, or the same keys at the top level of a push that has neither.
    ///
    /// - Returns: nil when `userInfo` has no custom data.
    /// - Throws: the first of ``Reading/diagnostics``: the push has a value
    ///   that cannot be read, or flags that disagree. A device reads it
    ///   anyway, with ``read(_:)``. Both spellings of a key, with different
    ///   references, are not a problem: they are united.
    public static func customData(in userInfo: [AnyHashable: Any]) throws -> NotificationCustomData? {
        let reading = read(userInfo)
        if let problem = reading.diagnostics.first { throw problem }
        return reading.customData
    }

    /// The references a retraction push asks to remove, read as ``read(_:)``
    /// reads them.
    ///
    /// - Returns: nil when the push is not a retraction: no custom data, the
    ///   removal flag not set to an accepted true value, or no reference that
    ///   could be read.
    public static func retraction(in userInfo: [AnyHashable: Any]) -> Set<ReferenceID>? {
        read(userInfo).retraction
    }

    /// Whether a push carries custom data keys at its top level.
    private static func hasTopLevelKeys(_ userInfo: [AnyHashable: Any]) -> Bool {
        let keys =
            PayloadDialect.allCases.flatMap { [$0.referenceIDKey, $0.mustRemoveKey] } + [
                PayloadDialect.referenceIDsKey, PayloadDialect.threadIDKey, PayloadDialect.threadIDsKey, PayloadDialect.editKey,
            ]
        return keys.contains { userInfo[$0] != nil }
    }
}
