import Foundation
import RetractKit

/// The push service a device is reached through: what the ledger records
/// with each delivery (its `transport`), so a retraction goes the way the
/// original went.
package enum PushService: String, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Apple Push Notification service: tokens are bytes, written as hex.
    case apns
    /// Firebase Cloud Messaging: registration tokens are text, kept as their UTF-8 bytes.
    case fcm

    package var description: String { self == .apns ? "APNs" : "FCM" }

    /// The token `text` stands for, or nil, 1 to ``Delivery/maximumTokenLength``
    /// bytes: hex for APNs; for FCM the registration token itself, of letters,
    /// digits, `-`, `_`, `:` and `.` (what FCM issues: base64url with a
    /// colon), so a token can also name a device in a URL path.
    package func token(_ text: some StringProtocol) -> DeviceToken? {
        let token: DeviceToken?
        switch self {
        case .apns: token = DeviceToken(hex: text)
        case .fcm: token = text.utf8.allSatisfy({ Self.fcmTokenBytes.contains($0) }) ? DeviceToken(bytes: Array(text.utf8)) : nil
        }
        guard let token, (1...Delivery.maximumTokenLength).contains(token.bytes.count) else { return nil }
        return token
    }

    /// The token `text` stands for through either service (an APNs token is
    /// hex; an FCM one never is, having a colon), or nil: where a device is
    /// named without its service, as a read's reader is.
    package static func anyToken(_ text: some StringProtocol) -> DeviceToken? {
        apns.token(text) ?? fcm.token(text)
    }

    /// Why `text` is not a token of this service, for error messages.
    package func tokenProblem(_ text: some StringProtocol) -> String {
        switch self {
        case .apns:
            "\"\(text.prefix(80))\" is not a device token: hex digits, an even number of them, 1 to \(Delivery.maximumTokenLength) bytes"
        case .fcm:
            "\"\(text.prefix(80))\" is not an FCM registration token: 1 to \(Delivery.maximumTokenLength) letters, digits, '-', '_', ':' or '.'"
        }
    }

    private static let fcmTokenBytes = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:.".utf8)

    /// How a token of this service is written: hex for APNs, the registration token for FCM.
    package func text(of token: DeviceToken) -> String {
        switch self {
        case .apns: token.hex
        case .fcm: String(decoding: token.bytes, as: UTF8.self)
        }
    }

}
