/// What it says about an app's own settings when most of its devices fail
/// the same way: one token refused is about that device; most of them
/// refused is about the app. Shown with a retraction's account and a send's.
package enum ConfigurationHint {
    /// Failure reasons that, for most devices, point at the app's settings.
    static let signs: [(reason: String, hint: String)] = [
        (
            "BadDeviceToken",
            "the app's environment (sandbox or production) probably does not match the builds these tokens came from: "
                + "App Store and TestFlight builds need production, builds from Xcode sandbox"
        ),
        (
            "DeviceTokenNotForTopic",
            "the app's topic is probably not the bundle id these tokens were issued for"
        ),
        (
            "SENDER_ID_MISMATCH",
            "the app's FCM service account probably belongs to another Firebase project than the one these tokens were issued for"
        ),
    ]

    /// One hint for each sign that more than half of `attempted` devices
    /// failed with, naming how many.
    ///
    /// - Parameters:
    ///   - failures: devices failed, by reason (APNs's reason, or FCM's code within its text).
    ///   - attempted: devices whose push got an answer (sent, dead or failed).
    package static func hints(failures: [String: Int], attempted: Int) -> [String] {
        guard attempted > 0 else { return [] }
        return signs.compactMap { sign in
            let count = failures.filter { $0.key.contains(sign.reason) }.values.reduce(0, +)
            guard count * 2 > attempted else { return nil }
            return "\(count) of \(attempted) devices were refused with \(sign.reason): \(sign.hint)"
        }
    }
}
