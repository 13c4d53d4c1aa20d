import Foundation

/// The iOS a simulated phone runs, as far as what it shows depends on it:
/// `interruption-level` (iOS 15) and the filtering entitlement (iOS 13.3).
/// Written as `"17.0"` in JSON, as a user writes it.
public struct IOSVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(_ major: Int, _ minor: Int = 0) {
        self.major = major
        self.minor = minor
    }

    /// `"15"`, `"15.4"` or `"15.4.1"` (the patch is not kept); nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), let major = Int(parts[0]), major >= 0 else { return nil }
        let minor = parts.count > 1 ? Int(parts[1]) : 0
        guard let minor, minor >= 0, parts.count < 3 || Int(parts[2]) != nil else { return nil }
        self.init(major, minor)
    }

    /// What a phone is unless a test says otherwise: a current iOS.
    public static let current = IOSVersion(17, 0)
    /// From iOS 15, `interruption-level: passive` adds an alert to the list
    /// without lighting the screen or playing a sound; before, every alert
    /// shown does both.
    public static let interruptionLevels = IOSVersion(15, 0)
    /// From iOS 13.3, an extension with the filtering entitlement can hide
    /// an alert; before, the entitlement does not exist, and an alert whose
    /// extension hands back empty content is shown as it came.
    public static let filtering = IOSVersion(13, 3)

    public var description: String { "\(major).\(minor)" }

    public static func < (lhs: IOSVersion, rhs: IOSVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let version = IOSVersion(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "\"\(text)\" is not an iOS version such as \"17.0\""))
        }
        self = version
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
