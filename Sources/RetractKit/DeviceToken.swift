import Foundation

/// A device's push token: the bytes APNs issued, written as lowercase hex in
/// request paths and logs.
///
/// An app gets it in `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`
/// as `Data`; a server receives it as hex.
public struct DeviceToken: Hashable, Sendable, Comparable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(_ data: Data) {
        self.bytes = Array(data)
    }

    /// Nil unless `hex` is a non-empty, even-length string of hex digits (either case).
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard !digits.isEmpty, digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = HexDigits.value(of: digits[index]), let low = HexDigits.value(of: digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// Lowercase hex, as APNs paths carry it.
    public var hex: String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(Self.hexDigits[Int(byte >> 4)])
            text.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Byte order, which is also the order of `hex`. Compared and hashed
    /// as whole buffers: the engine does both for every device of a page.
    public static func < (lhs: DeviceToken, rhs: DeviceToken) -> Bool {
        let common = min(lhs.bytes.count, rhs.bytes.count)
        let order = lhs.bytes.withUnsafeBytes { left in
            rhs.bytes.withUnsafeBytes { right in
                common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
            }
        }
        return order != 0 ? order < 0 : lhs.bytes.count < rhs.bytes.count
    }

    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

extension DeviceToken: CustomStringConvertible {
    public var description: String { hex }
}
