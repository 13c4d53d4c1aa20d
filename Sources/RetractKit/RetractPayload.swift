import Foundation

/// Reads Retract's custom data out of a push's `userInfo`.
public enum RetractPayload {
    /// The custom data under `notificationCustomData` (or the article's
    /// `notifcationCustomData`), given as an object, a JSON string or `Data`.
    ///
    /// - Returns: nil when `userInfo` has no custom data.
    /// - Throws: ``RetractPayloadError`` naming the key when it is malformed.
    public static func customData(in userInfo: [AnyHashable: Any]) throws -> NotificationCustomData? {
        var found: (key: String, customData: NotificationCustomData)?
        for key in PayloadDialect.allCases.map(\.customDataKey) {
            guard let value = userInfo[key], !(value is NSNull) else { continue }
            let customData = try NotificationCustomData(userInfoValue: value, path: key)
            if let earlier = found, earlier.customData != customData {
                throw RetractPayloadError.conflictingKeys(earlier.key, key)
            }
            found = found ?? (key, customData)
        }
        return found?.customData
    }

    /// The references a retraction push asks to remove.
    ///
    /// - Returns: nil when the push is not a retraction: no custom data, the
    ///   removal flag not set, no reference, or custom data too malformed to
    ///   read (``customData(in:)`` says why).
    public static func retraction(in userInfo: [AnyHashable: Any]) -> Set<ReferenceID>? {
        guard let customData = try? customData(in: userInfo), customData.mustRemoveReferred else { return nil }
        let references = Set(customData.references)
        return references.isEmpty ? nil : references
    }
}
