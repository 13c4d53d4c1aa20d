import Foundation

/// The object a retractable notification carries next to `aps`.
///
/// An original carries its reference; a retraction carries the references to
/// remove and the removal flag:
/// ```json
/// "notificationCustomData": { "pushNotificationReferenceId": "msg-8812",
///                             "isReferredNotificationMustRemoved": true }
/// ```
/// Reading is tolerant (see docs/payload.md): both dialects' spellings, ids as
/// strings or integers, the flag as `true`, `1` or `"true"`. Anything else is a
/// ``RetractPayloadError`` that names the key.
public struct NotificationCustomData: Hashable, Sendable {
    /// The single reference (`pushNotificationReferenceId`).
    public var referenceID: ReferenceID?
    /// A batch of references (`pushNotificationReferenceIds`).
    public var referenceIDs: [ReferenceID]
    /// The removal flag (`isReferredNotificationMustRemoved`).
    public var mustRemoveReferred: Bool

    public init(referenceID: ReferenceID? = nil, referenceIDs: [ReferenceID] = [], mustRemoveReferred: Bool = false) {
        self.referenceID = referenceID
        self.referenceIDs = referenceIDs
        self.mustRemoveReferred = mustRemoveReferred
    }

    /// Every reference the custom data names, single and batch, without repeats.
    public var references: [ReferenceID] {
        var seen = Set<ReferenceID>()
        return ([referenceID].compactMap { $0 } + referenceIDs).filter { seen.insert($0).inserted }
    }
}

// MARK: - Reading

extension NotificationCustomData {
    /// Reads custom data from a `userInfo` value: a dictionary, a JSON string or
    /// JSON `Data`. `path` names the value in error messages.
    init(userInfoValue value: Any, path: String) throws {
        let object = try Self.object(fromUserInfoValue: value, path: path)
        try self.init(path: path) { key in object[key].map { PayloadValue($0) } }
    }

    /// The reference an original carries, read leniently: only the reference
    /// keys are looked at, so an odd value elsewhere does not hide it.
    static func originalReference(in userInfo: [AnyHashable: Any]) -> ReferenceID? {
        for key in PayloadDialect.allCases.map(\.customDataKey) {
            guard let value = userInfo[key], let object = try? Self.object(fromUserInfoValue: value, path: key) else { continue }
            let lookup: (String) -> PayloadValue? = { object[$0].map { PayloadValue($0) } }
            if let reference = try? readEither(
                PayloadDialect.allCases.map(\.referenceIDKey), path: key, lookup: lookup, read: Self.reference)
            {
                return reference
            }
        }
        return nil
    }

    /// The custom data object in a dictionary, a JSON string or JSON `Data`.
    private static func object(fromUserInfoValue value: Any, path: String) throws -> [String: Any] {
        switch value {
        case let dictionary as [AnyHashable: Any]:
            return stringKeyed(dictionary)
        case let string as String:
            return try parseObject(Data(string.utf8), path: path)
        case let data as Data:
            return try parseObject(data, path: path)
        default:
            throw RetractPayloadError.wrongType(
                key: path,
                expected: "an object, a JSON string or Data",
                found: PayloadValue(value).kind
            )
        }
    }

    /// Reads the fields through `lookup`, which returns the value under a key
    /// or nil when the key is absent; both reading paths end here.
    init(path: String, lookup: (String) throws -> PayloadValue?) throws {
        let referenceID = try Self.readEither(
            PayloadDialect.allCases.map(\.referenceIDKey),
            path: path,
            lookup: lookup,
            read: Self.reference
        )
        let mustRemove = try Self.readEither(
            PayloadDialect.allCases.map(\.mustRemoveKey),
            path: path,
            lookup: lookup,
            read: Self.flag
        )
        let batchPath = "\(path).\(PayloadDialect.referenceIDsKey)"
        var referenceIDs: [ReferenceID] = []
        switch try lookup(PayloadDialect.referenceIDsKey) {
        case nil, .null?:
            break
        case .array(let elements)?:
            for (index, element) in elements.enumerated() {
                if let reference = try Self.reference(element, path: "\(batchPath)[\(index)]") {
                    referenceIDs.append(reference)
                }
            }
        case let other?:
            throw RetractPayloadError.wrongType(key: batchPath, expected: "an array of references", found: other.kind)
        }
        self.init(referenceID: referenceID, referenceIDs: referenceIDs, mustRemoveReferred: mustRemove ?? false)
    }

    /// Reads a field that has a spelling per dialect; present under both
    /// spellings, the values must agree.
    private static func readEither<Value: Equatable>(
        _ keys: [String],
        path: String,
        lookup: (String) throws -> PayloadValue?,
        read: (PayloadValue, String) throws -> Value?
    ) throws -> Value? {
        var found: (key: String, value: Value)?
        for key in keys {
            guard let raw = try lookup(key), let value = try read(raw, "\(path).\(key)") else { continue }
            if let earlier = found, earlier.value != value {
                throw RetractPayloadError.conflictingKeys("\(path).\(earlier.key)", "\(path).\(key)")
            }
            found = found ?? (key, value)
        }
        return found?.value
    }

    /// A reference: a non-empty string or an integer; null means absent.
    static func reference(_ value: PayloadValue, path: String) throws -> ReferenceID? {
        switch value {
        case .null:
            return nil
        case .string(let string):
            guard !string.isEmpty else {
                throw RetractPayloadError.invalidValue(key: path, reason: "a reference must not be empty")
            }
            return ReferenceID(string)
        case .integer(let digits):
            return ReferenceID(digits)
        case .fraction(let number) where number.rounded() == number:
            throw RetractPayloadError.invalidValue(
                key: path,
                reason: "\(number) is too large for an integer reference; send it as a string"
            )
        case .fraction(let number):
            throw RetractPayloadError.invalidValue(key: path, reason: "\(number) is not an integer reference")
        default:
            throw RetractPayloadError.wrongType(key: path, expected: "a string or an integer", found: value.kind)
        }
    }

    /// The removal flag: `true`/`false`, `1`/`0`, or those as strings (FCM data
    /// values are strings); null means absent.
    static func flag(_ value: PayloadValue, path: String) throws -> Bool? {
        switch value {
        case .null:
            return nil
        case .bool(let bool):
            return bool
        case .integer("1"), .string("true"), .string("1"):
            return true
        case .integer("0"), .string("false"), .string("0"):
            return false
        case .integer, .fraction, .string:
            throw RetractPayloadError.invalidValue(
                key: path,
                reason: "\(Self.quotedForMessage(value)) is not a removal flag (true, 1 or \"true\")"
            )
        default:
            throw RetractPayloadError.wrongType(key: path, expected: "a boolean, 0/1 or \"true\"/\"false\"", found: value.kind)
        }
    }

    private static func quotedForMessage(_ value: PayloadValue) -> String {
        switch value {
        case .integer(let digits): digits
        case .fraction(let number): "\(number)"
        case .string(let string): "\"\(string)\""
        default: value.kind
        }
    }

    private static func parseObject(_ data: Data, path: String) throws -> [String: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw RetractPayloadError.invalidJSON(key: path, reason: reason)
        }
        guard let dictionary = parsed as? [AnyHashable: Any] else {
            throw RetractPayloadError.wrongType(key: path, expected: "a JSON object", found: PayloadValue(parsed).kind)
        }
        return stringKeyed(dictionary)
    }

    /// Keys that are not strings cannot be custom data keys; they are ignored.
    private static func stringKeyed(_ dictionary: [AnyHashable: Any]) -> [String: Any] {
        var object: [String: Any] = [:]
        for (key, value) in dictionary {
            if let key = key.base as? String { object[key] = value }
        }
        return object
    }
}

// MARK: - Codable

extension NotificationCustomData: Codable {
    /// Decodes the object, or a JSON string holding it, with the same rules as
    /// ``RetractPayload/customData(in:)``; a ``RetractPayloadError`` comes
    /// wrapped in `DecodingError.dataCorrupted`.
    public init(from decoder: any Decoder) throws {
        let path = decoder.codingPath.map(\.stringValue).joined(separator: ".")
        do {
            if let container = try? decoder.container(keyedBy: AnyKey.self) {
                try self.init(path: path) { key in
                    try container.decodeIfPresent(PayloadValue.self, forKey: AnyKey(key))
                }
                return
            }
            let value = try PayloadValue(from: decoder)
            guard case .string(let string) = value else {
                throw RetractPayloadError.wrongType(key: path, expected: "an object, a JSON string or Data", found: value.kind)
            }
            try self.init(userInfoValue: string, path: path)
        } catch let error as RetractPayloadError {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error)
            )
        }
    }

    /// Encodes in the canonical dialect, leaving out what is absent.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        try container.encodeIfPresent(referenceID, forKey: AnyKey(PayloadDialect.canonical.referenceIDKey))
        if !referenceIDs.isEmpty {
            try container.encode(referenceIDs, forKey: AnyKey(PayloadDialect.referenceIDsKey))
        }
        if mustRemoveReferred {
            try container.encode(true, forKey: AnyKey(PayloadDialect.canonical.mustRemoveKey))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init(_ stringValue: String) { self.stringValue = stringValue }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
