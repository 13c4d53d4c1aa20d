import Foundation
import RetractKit

/// The push service a device is reached through: what the ledger records
/// with each delivery (its `transport`), so a retraction goes the way the
/// original went.
public enum PushService: String, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Apple Push Notification service: tokens are bytes, written as hex.
    case apns
    /// Firebase Cloud Messaging: registration tokens are text, kept as their UTF-8 bytes.
    case fcm

    public var description: String { self == .apns ? "APNs" : "FCM" }

    /// The token `text` stands for, or nil: hex for APNs; for FCM the
    /// registration token itself, 1 to ``Delivery/maximumTokenLength`` bytes
    /// of letters, digits, `-`, `_`, `:` and `.` (what FCM issues: base64url
    /// with a colon), so a token can also name a device in a URL path.
    public func token(_ text: some StringProtocol) -> DeviceToken? {
        switch self {
        case .apns:
            return DeviceToken(hex: text)
        case .fcm:
            let bytes = Array(text.utf8)
            guard !bytes.isEmpty, bytes.count <= Delivery.maximumTokenLength,
                bytes.allSatisfy({ Self.fcmTokenBytes.contains($0) })
            else { return nil }
            return DeviceToken(bytes: bytes)
        }
    }

    private static let fcmTokenBytes = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:.".utf8)

    /// How a token of this service is written: hex for APNs, the registration token for FCM.
    public func text(of token: DeviceToken) -> String {
        switch self {
        case .apns: token.hex
        case .fcm: String(decoding: token.bytes, as: UTF8.self)
        }
    }

    /// What a token of this service looks like, for error messages.
    public var tokenForm: String {
        switch self {
        case .apns: "an even number of hex digits"
        case .fcm: "an FCM registration token: 1 to \(Delivery.maximumTokenLength) letters, digits, '-', '_', ':' or '.'"
        }
    }
}
