import Foundation

/// The id that ties a notification to its later retraction.
///
/// Payloads in the field carry it as a JSON string (`"msg-8812"`) or, following
/// the original article, as a JSON integer (`233`). Both forms name the same
/// reference: `233` and `"233"` are equal. The value is kept as its string form;
/// it encodes as a string unless the encoder asks for integers
/// (see ``ReferenceID/encodingStyleKey``).
public struct ReferenceID: Hashable, Sendable, Comparable {
    /// The reference in its string form; `233` is stored as `"233"`.
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public init<Integer: BinaryInteger>(_ integer: Integer) {
        self.rawValue = String(integer)
    }

    /// The reference as an integer when its string form is exactly a decimal
    /// integer that fits in 64 bits (`"233"`, `"-5"`; not `"0233"`, `"+5"` or `"2.0"`).
    /// The legacy dialect can only carry such references.
    public var integerValue: Int64? {
        guard let value = Int64(rawValue), String(value) == rawValue else { return nil }
        return value
    }

    public static func < (lhs: ReferenceID, rhs: ReferenceID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}

extension ReferenceID: CustomStringConvertible {
    public var description: String { rawValue }
}

extension ReferenceID: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        self.init(value)
    }
}

extension ReferenceID: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) {
        self.init(value)
    }
}

extension ReferenceID: Codable {
    /// How a ``ReferenceID`` encodes: as a JSON string (the default) or as a
    /// JSON integer, which is what the legacy dialect's clients decode.
    public enum EncodingStyle: Sendable {
        case string
        case integer
    }

    /// Set `encoder.userInfo[ReferenceID.encodingStyleKey] = ReferenceID.EncodingStyle.integer`
    /// to encode references as integers; a reference that is not an integer then
    /// fails to encode.
    public static let encodingStyleKey = CodingUserInfoKey(rawValue: "RetractKit.ReferenceID.encodingStyle")!

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            guard !string.isEmpty else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "A reference id must not be empty")
            }
            self.init(string)
        } else if let integer = try? container.decode(Int64.self) {
            self.init(integer)
        } else if let integer = try? container.decode(UInt64.self) {
            self.init(integer)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "A reference id must be a JSON string or integer"
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch encoder.userInfo[Self.encodingStyleKey] as? EncodingStyle ?? .string {
        case .string:
            try container.encode(rawValue)
        case .integer:
            guard let integer = integerValue else {
                throw EncodingError.invalidValue(
                    self,
                    .init(
                        codingPath: encoder.codingPath,
                        debugDescription: "Reference \"\(rawValue)\" is not an integer and cannot be encoded as one"
                    )
                )
            }
            try container.encode(integer)
        }
    }
}
