import Foundation
import RetractKit

/// Checks a `messages:send` body the way FCM and APNs would, field by field.
/// Returns the message's parts, or the rejection that names the first bad field.
struct ValidatedMessage {
    var token: String
    var data: [String: String]
    var apnsHeaders: [String: String]
    var apnsPayload: [String: Any]
    var androidPriority: String?
    var androidNotification: [String: String]?

    /// The fields FCM HTTP v1 knows on a message; any other is refused.
    private static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]

    init(body: Data) throws(SimulatedRejection) {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw .invalidArgument("", "Invalid JSON payload received.")
        }
        guard let message = object["message"] as? [String: Any] else {
            throw .invalidArgument("message", "Invalid JSON payload received. \"message\" is required.")
        }
        for (key, _) in object where key != "message" && key != "validate_only" {
            throw .invalidArgument(key, "Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
        }
        for key in message.keys where !Self.messageFields.contains(key) {
            throw .invalidArgument(
                "message.\(key)", "Invalid JSON payload received. Unknown name \"\(key)\" at 'message': Cannot find field.")
        }
        if message["topic"] != nil || message["condition"] != nil {
            throw .invalidArgument("message.token", "The simulator sends to device tokens only.")
        }
        guard let token = message["token"] as? String, !token.isEmpty, token.utf8.count <= 4096,
            !token.contains(where: { $0.isWhitespace || $0.isNewline }), !token.containsControlCharacters
        else {
            throw .invalidArgument("message.token", "The registration token is not a valid FCM registration token")
        }
        self.token = token
        data = [:]
        if let rawData = message["data"] {
            guard let fields = rawData as? [String: Any] else { throw .invalidArgument("message.data", "data must be a map of strings.") }
            for (key, value) in fields {
                guard let text = value as? String else {
                    throw .invalidArgument("message.data[\(key)]", "Invalid value at 'message.data[\(key)]': expected a string.")
                }
                let lowered = key.lowercased()
                if ["from", "notification", "message_type"].contains(key) || lowered.hasPrefix("google") || lowered.hasPrefix("gcm") {
                    throw .invalidArgument("message.data", "Invalid data payload key: \(key)")
                }
                data[key] = text
            }
        }
        apnsHeaders = [:]
        apnsPayload = [:]
        if let rawAPNs = message["apns"] {
            guard let apns = rawAPNs as? [String: Any] else { throw .invalidArgument("message.apns", "apns must be an object.") }
            if let rawHeaders = apns["headers"] {
                guard let headers = rawHeaders as? [String: String] else {
                    throw .invalidArgument("message.apns.headers", "APNs headers must be a map of strings.")
                }
                apnsHeaders = headers
            }
            if let rawPayload = apns["payload"] {
                guard let payload = rawPayload as? [String: Any] else {
                    throw .invalidArgument("message.apns.payload", "The APNs payload must be an object.")
                }
                apnsPayload = payload
            }
        }
        if let rawAndroid = message["android"] {
            guard let android = rawAndroid as? [String: Any] else {
                throw .invalidArgument("message.android", "android must be an object.")
            }
            if let priority = android["priority"] {
                guard let text = priority as? String, ["NORMAL", "HIGH"].contains(text.uppercased()) else {
                    throw .invalidArgument("message.android.priority", "Invalid value at 'message.android.priority'.")
                }
                androidPriority = text.uppercased()
            }
            if let notification = android["notification"] {
                guard let fields = notification as? [String: String] else {
                    throw .invalidArgument("message.android.notification", "The Android notification's fields must be strings.")
                }
                androidNotification = fields
            }
        }
        try checkAPNs()
    }

    /// What APNs refuses in an alert push's `aps`, in FCM's words.
    static func alertProblem(_ aps: [String: Any]) -> String? {
        guard ["alert", "sound", "badge"].contains(where: { aps[$0] != nil }) else {
            return "An alert push needs \"alert\", \"sound\" or \"badge\"."
        }
        if (aps["mutable-content"] as? NSNumber)?.intValue == 1, aps["alert"] == nil {
            return "\"mutable-content\" needs an \"alert\"."
        }
        return nil
    }

    /// What APNs would refuse of the `apns` block, as FCM reports it.
    private func checkAPNs() throws(SimulatedRejection) {
        guard !apnsPayload.isEmpty || !apnsHeaders.isEmpty else { return }
        guard let aps = apnsPayload["aps"] as? [String: Any] else {
            throw .invalidArgument("message.apns.payload.aps", "The APNs payload needs an \"aps\" object.")
        }
        let pushType = apnsHeaders["apns-push-type"] ?? "alert"
        guard ["alert", "background"].contains(pushType) else {
            throw .invalidArgument("message.apns.headers", "Invalid apns-push-type \"\(pushType)\".")
        }
        if let priority = apnsHeaders["apns-priority"], !["5", "10"].contains(priority) {
            throw .invalidArgument("message.apns.headers", "Invalid apns-priority \"\(priority)\".")
        }
        if pushType == "background" {
            guard apnsHeaders["apns-priority"] == "5" else {
                throw .invalidArgument("message.apns.headers", "A background push must have apns-priority 5.")
            }
            guard (aps["content-available"] as? NSNumber)?.intValue == 1 else {
                throw .invalidArgument("message.apns.payload.aps", "A background push needs \"content-available\": 1.")
            }
            if let shown = ["alert", "sound", "badge"].first(where: { aps[$0] != nil }) {
                throw .invalidArgument("message.apns.payload.aps", "A background push cannot have \"\(shown)\".")
            }
        }
        if pushType == "alert", let problem = Self.alertProblem(aps) {
            throw .invalidArgument("message.apns.payload.aps", problem)
        }
        if let collapseID = apnsHeaders["apns-collapse-id"], collapseID.utf8.count > 64 {
            throw .invalidArgument("message.apns.headers", "apns-collapse-id is longer than 64 bytes.")
        }
        // The payload APNs gets is at most the APNs payload plus the data keys and their values:
        // it is written out to be measured only when that bound is over the limit.
        let bound = (try? JSONSerialization.data(withJSONObject: apnsPayload))?.count ?? 0
        let dataBytes = data.reduce(0) { $0 + $1.key.utf8.count * 2 + $1.value.utf8.count * 6 + 8 }
        guard bound + dataBytes + 40 <= 4096 || userInfoJSON(messageID: "0").count <= 4096 else {
            throw .invalidArgument("message.apns.payload", "The APNs payload is larger than 4096 bytes.")
        }
    }

    /// The `userInfo` an iPhone's app is handed: the APNs payload with the
    /// data keys beside `aps`, and FCM's message id.
    func userInfoJSON(messageID: String) -> Data {
        var userInfo = apnsPayload
        for (key, value) in data { userInfo[key] = value }
        userInfo["gcm.message_id"] = messageID
        return (try? JSONSerialization.data(withJSONObject: userInfo, options: [.sortedKeys])) ?? Data()
    }
}
