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
/// strings or integers, the flag as `true`, `1` or `"true"`. A value that
/// cannot be read is a ``RetractPayloadError`` that names its key.
public struct NotificationCustomData: Hashable, Sendable {
    /// The single reference (`pushNotificationReferenceId`).
    public var referenceID: ReferenceID?
    /// A batch of references (`pushNotificationReferenceIds`).
    public var referenceIDs: [ReferenceID]
    /// The removal flag (`isReferredNotificationMustRemoved`).
    public var mustRemoveReferred: Bool
    /// An original's conversation (`pushNotificationThreadId`).
    public var threadID: String?
    /// The conversations a retraction removes (`pushNotificationThreadIds`):
    /// every notification whose thread is one of them.
    public var threadIDs: [String]
    /// The rest of what the device should remove is in the device feed
    /// (`pushNotificationMoreInFeed`): this push could not carry it all.
    public var moreInFeed: Bool
    /// The new text of the notification of its references
    /// (`pushNotificationEdit`): the push is an edit, unless it is a retraction.
    public var edit: NotificationEdit?
    /// The account its references and threads belong to
    /// (`pushNotificationAccount`), where one app on a phone holds several;
    /// nil: the app's only account.
    public var account: String?
    /// The app icon's badge a read's push gives (`pushNotificationBadge`), for
    /// the app to set: a background push carries no `aps.badge`.
    public var badge: Int?

    public init(
        referenceID: ReferenceID? = nil, referenceIDs: [ReferenceID] = [], mustRemoveReferred: Bool = false, threadID: String? = nil,
        threadIDs: [String] = [], moreInFeed: Bool = false, edit: NotificationEdit? = nil, account: String? = nil, badge: Int? = nil
    ) {
        self.referenceID = referenceID
        self.referenceIDs = referenceIDs
        self.mustRemoveReferred = mustRemoveReferred
        self.threadID = threadID
        self.threadIDs = threadIDs
        self.moreInFeed = moreInFeed
        self.edit = edit
        self.account = account
        self.badge = badge
    }

    /// Every reference the custom data names, single and batch, without repeats.
    public var references: [ReferenceID] {
        var seen = Set<ReferenceID>()
        return ([referenceID].compactMap { $0 } + referenceIDs).filter { seen.insert($0).inserted }
    }
}

/// What an edit shows instead of a notification's text
/// (`"pushNotificationEdit": {"title": "Ada", "body": "See you at 9?"}`).
public struct NotificationEdit: Hashable, Sendable, Codable {
    /// The new title; nil keeps the one shown, where the device can (docs/payload.md, "Edits").
    public var title: String?
    public var body: String

    public init(title: String? = nil, body: String) {
        self.title = title
        self.body = body
    }
}

// MARK: - Reading

extension NotificationCustomData {
    /// Reads one custom data object strictly: the first value that cannot be
    /// read is thrown, where a device, reading through
    /// ``RetractPayload/read(_:)``, leaves it out. Servers check what they
    /// send this way.
    init(userInfoValue value: Any, path: String) throws {
        var reader = CustomDataReader()
        reader.read(userInfoValue: value, path: path)
        if let problem = reader.diagnostics.first { throw problem }
        self = reader.customData
    }

    /// Reads one object through `lookup` strictly; the Codable path.
    init(path: String, lookup: (String) throws -> PayloadValue?) throws {
        var reader = CustomDataReader()
        try reader.read(path: path, lookup: lookup)
        if let problem = reader.diagnostics.first { throw problem }
        self = reader.customData
    }

    /// A thread id: read as a reference is (a non-empty string or an
    /// integer); null means absent.
    static func thread(_ value: PayloadValue, path: String) throws(RetractPayloadError) -> String? {
        try identifier(value, path: path, named: "thread id")
    }

    /// An account: read as a reference is (a non-empty string or an
    /// integer); null means absent.
    static func account(_ value: PayloadValue, path: String) throws(RetractPayloadError) -> String? {
        try identifier(value, path: path, named: "account")
    }

    /// A value read as a reference is, whose messages call it `name`.
    private static func identifier(_ value: PayloadValue, path: String, named name: String) throws(RetractPayloadError) -> String? {
        do {
            return try reference(value, path: path)?.rawValue
        } catch {
            guard case .invalidValue(let key, let reason) = error else { throw error }
            throw .invalidValue(key: key, reason: reason.replacingOccurrences(of: "reference", with: name))
        }
    }

    /// A badge: a whole number from 0, or one as a string (FCM data values
    /// are strings); null means absent.
    static func badge(_ value: PayloadValue, path: String) throws(RetractPayloadError) -> Int? {
        switch value {
        case .null:
            return nil
        case .integer(let digits), .string(let digits):
            guard let badge = Int(digits), badge >= 0 else {
                throw RetractPayloadError.invalidValue(key: path, reason: "\(Self.quotedForMessage(value)) is not a badge (a whole number from 0)")
            }
            return badge
        case .fraction:
            throw RetractPayloadError.invalidValue(key: path, reason: "\(Self.quotedForMessage(value)) is not a badge (a whole number from 0)")
        default:
            throw RetractPayloadError.wrongType(key: path, expected: "a whole number", found: value.kind)
        }
    }

    /// A reference: a non-empty string or an integer; null means absent.
    static func reference(_ value: PayloadValue, path: String) throws(RetractPayloadError) -> ReferenceID? {
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
    static func flag(_ value: PayloadValue, path: String) throws(RetractPayloadError) -> Bool? {
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
        try container.encodeIfPresent(threadID, forKey: AnyKey(PayloadDialect.threadIDKey))
        if !threadIDs.isEmpty {
            try container.encode(threadIDs, forKey: AnyKey(PayloadDialect.threadIDsKey))
        }
        if moreInFeed {
            try container.encode(true, forKey: AnyKey(PayloadDialect.moreInFeedKey))
        }
        try container.encodeIfPresent(edit, forKey: AnyKey(PayloadDialect.editKey))
        try container.encodeIfPresent(account, forKey: AnyKey(PayloadDialect.accountKey))
        try container.encodeIfPresent(badge, forKey: AnyKey(PayloadDialect.badgeKey))
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init(_ stringValue: String) { self.stringValue = stringValue }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
