import Foundation
import NIOCore
import RetractKit

/// An FCM HTTP v1 message for any device, made from an APNs-style body (the
/// `aps` object and custom data that ``PayloadBuilder`` writes): only the
/// token differs from device to device, so a broadcast builds the JSON once.
///
/// The body's `aps` goes into the `apns` block's payload; every other key of
/// the body goes into `data`, where FCM takes only strings, so an object is
/// sent as its JSON text. On an iPhone the `data` keys arrive next to `aps` in
/// `userInfo`, and ``RetractPayload`` reads custom data sent as a JSON string.
public struct FCMMessage: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// Wakes the app without showing anything: `apns-push-type: background`, priority 5.
        case background
        /// Shows an alert (or sound, or badge): `apns-push-type: alert`, priority 10.
        /// Android shows the alert's title and body, tagged with the collapse
        /// id, so a later alert with the same tag replaces it.
        case alert
        /// An alert an iPhone hands to the app's Notification Service
        /// Extension first (`mutable-content` in `aps`): `apns-push-type:
        /// alert`, priority 10. Android gets a data message, as for
        /// ``background``, which the app handles itself.
        case serviceExtension
        /// An alert on an iPhone, as ``alert``; on Android a data message
        /// only, with the alert's title and body in `data` (`title`, `body`,
        /// unless the body has keys of those names), which the app shows
        /// itself, as chat apps do to group by conversation.
        case appShownAlert
    }

    /// The message JSON after the token: `,"data":…}}`.
    private let rest: [UInt8]

    /// The largest APNs-style body to make a message of. The custom data goes
    /// into `data` as a JSON string, whose escaped quotes make it up to half
    /// as long again for ordinary references, and FCM adds its own keys
    /// (`gcm.message_id`, `google.c.*`) to what APNs gets: a body of this size
    /// still fits APNs's 4096 bytes.
    public static let bodyLimit = 2600

    /// What FCM's own keys add to the payload an iPhone gets, at most.
    static let fcmKeysAllowance = 200

    /// - Parameters:
    ///   - body: a JSON object with `aps`.
    ///   - collapseID: becomes `apns-collapse-id` (the notification's identifier
    ///     on an iPhone) and the Android `collapse_key`.
    ///   - tag: the tag of an ``Kind/alert`` on Android: a notification
    ///     showing with the same tag is replaced, and RetractKit for Android
    ///     finds an original by it. The collapse id when not given.
    /// - Throws: ``FCMMessageError`` when the body cannot be an FCM message.
    public init(body: some Collection<UInt8>, kind: Kind, collapseID: String? = nil, tag: String? = nil) throws(FCMMessageError) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw FCMMessageError("the body is not a JSON object")
        }
        guard let aps = object["aps"] as? [String: Any] else { throw FCMMessageError("the body has no \"aps\" object") }
        var data: [String: String] = [:]
        for (key, value) in object where key != "aps" {
            if let reason = Self.reservedDataKeyProblem(key) { throw FCMMessageError("data key \"\(key)\": \(reason)") }
            if let text = value as? String {
                data[key] = text
            } else if let encoded = try? JSONSerialization.data(
                withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes])
            {
                data[key] = String(decoding: encoded, as: UTF8.self)
            }
        }
        if kind == .appShownAlert, let words = Self.androidNotification(from: aps["alert"]) {
            for (key, text) in words where data[key] == nil { data[key] = text }
        }
        let deviceBytes = Self.deviceBytes(aps: aps, data: data)
        guard deviceBytes <= 4096 else {
            throw FCMMessageError("the payload an iPhone would get is about \(deviceBytes) bytes with FCM's keys; APNs takes 4096")
        }
        var headers = ["apns-push-type": kind == .background ? "background" : "alert", "apns-priority": kind == .background ? "5" : "10"]
        var android: [String: Any] = ["priority": "HIGH"]
        if let collapseID {
            headers["apns-collapse-id"] = collapseID
            android["collapse_key"] = collapseID
        }
        if kind == .alert, var notification = Self.androidNotification(from: aps["alert"]) {
            // The tag is what lets a later notification replace this one on Android, and a retraction find it.
            notification["tag"] = tag ?? collapseID
            android["notification"] = notification
        }
        var message: [String: Any] = ["apns": ["headers": headers, "payload": ["aps": aps]], "android": android]
        if !data.isEmpty { message["data"] = data }
        guard let encoded = try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            throw FCMMessageError("the body cannot be written as JSON")
        }
        // `{"android":…}` becomes `,"android":…}}` after the token.
        rest = Array(",".utf8) + encoded.dropFirst() + Array("}".utf8)
    }

    /// The request body of `messages:send` for `token`.
    public func request(token: String) -> ByteBuffer {
        let quoted = JSONText.quoted(token)
        var buffer = ByteBuffer()
        buffer.reserveCapacity(24 + quoted.utf8.count + rest.count)
        buffer.writeString(#"{"message":{"token":"#)
        buffer.writeString(quoted)
        buffer.writeBytes(rest)
        return buffer
    }

    /// What APNs would carry to an iPhone: `aps` with the data keys beside
    /// it as JSON strings, and FCM's keys.
    static func deviceBytes(aps: [String: Any], data: [String: String]) -> Int {
        let apsBytes = (try? JSONSerialization.data(withJSONObject: ["aps": aps]))?.count ?? 0
        let dataBytes = data.reduce(0) { total, field in
            let escaped = (try? JSONSerialization.data(withJSONObject: [field.value], options: [.withoutEscapingSlashes]))?.count ?? 0
            return total + field.key.utf8.count + escaped + 2
        }
        return apsBytes + dataBytes + fcmKeysAllowance
    }

    /// FCM refuses these data keys (they are its own).
    static func reservedDataKeyProblem(_ key: String) -> String? {
        if ["from", "notification", "message_type"].contains(key) { return "reserved by FCM" }
        let lowered = key.lowercased()
        if lowered.hasPrefix("google") || lowered.hasPrefix("gcm") { return "FCM reserves keys starting with \"google\" or \"gcm\"" }
        return nil
    }

    /// An alert's title and body, as Android shows them.
    private static func androidNotification(from alert: Any?) -> [String: String]? {
        if let text = alert as? String { return ["body": text] }
        guard let alert = alert as? [String: Any] else { return nil }
        var notification: [String: String] = [:]
        notification["title"] = alert["title"] as? String
        notification["body"] = alert["body"] as? String
        return notification.isEmpty ? nil : notification
    }
}

/// A body that cannot be made into an FCM message.
public struct FCMMessageError: Error, CustomStringConvertible, Sendable, Hashable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
