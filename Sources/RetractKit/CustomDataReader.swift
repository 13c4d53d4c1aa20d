import Foundation

/// Reads custom data value by value, from any number of objects, into one
/// ``NotificationCustomData``.
///
/// A value that cannot be read is set aside as a diagnostic and the rest is
/// kept, so one stray value never hides the references next to it. References
/// from every object and every spelling are united; the removal flag is set
/// when any accepted spelling says `true`.
struct CustomDataReader {
    private(set) var customData = NotificationCustomData()
    private(set) var diagnostics: [RetractPayloadError] = []
    /// Whether at least one object was read.
    private(set) var foundObject = false
    /// Every removal flag read, with its path, in reading order.
    private var flags: [(path: String, value: Bool)] = []
    /// Where the account was read from.
    private var accountPath: String?
    private var known = Set<ReferenceID>()
    private var knownThreads = Set<String>()

    /// Reads a custom data value from `userInfo`: an object, a JSON string or
    /// JSON `Data` holding one.
    mutating func read(userInfoValue value: Any, path: String) {
        do {
            let object = try Self.object(fromUserInfoValue: value, path: path)
            read(path: path) { key in object[key].map { PayloadValue($0) } }
        } catch {
            diagnostics.append(error)
        }
    }

    /// Reads the fields of one object through `lookup`, which returns the
    /// value under a key or nil when the key is absent.
    mutating func read(path: String, lookup: (String) throws -> PayloadValue?) rethrows {
        foundObject = true
        let knownBefore = known
        for key in PayloadDialect.allCases.map(\.referenceIDKey) {
            guard let value = try lookup(key),
                let reference = diagnosing({ () throws(RetractPayloadError) in
                    try NotificationCustomData.reference(value, path: Self.path(path, key))
                })
            else { continue }
            if customData.referenceID == nil {
                customData.referenceID = reference
            } else if !known.contains(reference) {
                customData.referenceIDs.append(reference)
            }
            known.insert(reference)
        }
        if let value = try lookup(PayloadDialect.referenceIDsKey) {
            // Within one object the batch is kept as written; what an earlier
            // object already named is not repeated.
            let batchPath = Self.path(path, PayloadDialect.referenceIDsKey)
            for reference in batch(value, path: batchPath) where !knownBefore.contains(reference) {
                customData.referenceIDs.append(reference)
                known.insert(reference)
            }
        }
        let threadPath = Self.path(path, PayloadDialect.threadIDKey)
        if customData.threadID == nil, let value = try lookup(PayloadDialect.threadIDKey) {
            customData.threadID = diagnosing { () throws(RetractPayloadError) in try NotificationCustomData.thread(value, path: threadPath)
            }
        }
        if let value = try lookup(PayloadDialect.threadIDsKey) {
            for thread in threads(value, path: Self.path(path, PayloadDialect.threadIDsKey)) where knownThreads.insert(thread).inserted {
                customData.threadIDs.append(thread)
            }
        }
        if let value = try lookup(PayloadDialect.moreInFeedKey),
            let more = diagnosing({ () throws(RetractPayloadError) in
                try NotificationCustomData.flag(value, path: Self.path(path, PayloadDialect.moreInFeedKey))
            })
        {
            customData.moreInFeed = customData.moreInFeed || more
        }
        // Every edit is read, for its diagnostics; the first readable one counts.
        if let value = try lookup(PayloadDialect.editKey), let edit = edit(value, path: Self.path(path, PayloadDialect.editKey)),
            customData.edit == nil
        {
            customData.edit = edit
        }
        let accountPath = Self.path(path, PayloadDialect.accountKey)
        if let value = try lookup(PayloadDialect.accountKey),
            let account = diagnosing({ () throws(RetractPayloadError) in try NotificationCustomData.account(value, path: accountPath) })
        {
            if let first = self.accountPath, customData.account != account {
                // The first account counts: a push is of one account.
                diagnostics.append(.conflictingKeys(first, accountPath))
            } else if self.accountPath == nil {
                customData.account = account
                self.accountPath = accountPath
            }
        }
        if customData.badge == nil, let value = try lookup(PayloadDialect.badgeKey) {
            customData.badge = diagnosing { () throws(RetractPayloadError) in
                try NotificationCustomData.badge(value, path: Self.path(path, PayloadDialect.badgeKey))
            }
        }
        for key in PayloadDialect.allCases.map(\.mustRemoveKey) {
            let flagPath = Self.path(path, key)
            guard let value = try lookup(key),
                let flag = diagnosing({ () throws(RetractPayloadError) in try NotificationCustomData.flag(value, path: flagPath) })
            else { continue }
            if let first = flags.first, first.value != flag, flags.allSatisfy({ $0.value == first.value }) {
                // Reported once; removing wins, as either spelling alone would have removed.
                diagnostics.append(.conflictingKeys(first.path, flagPath))
            }
            flags.append((flagPath, flag))
            customData.mustRemoveReferred = customData.mustRemoveReferred || flag
        }
    }

    /// The references of a batch: an array, or a JSON string holding one (FCM
    /// data values are strings). Elements that are not references are set aside.
    private mutating func batch(_ value: PayloadValue, path: String) -> [ReferenceID] {
        let expected = "an array of references, or a JSON array in a string"
        let elements: [PayloadValue]
        switch value {
        case .null:
            return []
        case .array(let array):
            elements = array
        case .string(let text):
            guard let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else {
                diagnostics.append(.wrongType(key: path, expected: expected, found: "a string that is not JSON"))
                return []
            }
            guard case .array(let array) = PayloadValue(parsed) else {
                diagnostics.append(.wrongType(key: path, expected: expected, found: "a string holding \(PayloadValue(parsed).kind)"))
                return []
            }
            elements = array
        default:
            diagnostics.append(.wrongType(key: path, expected: expected, found: value.kind))
            return []
        }
        return elements.enumerated().compactMap { index, element in
            diagnosing { () throws(RetractPayloadError) in try NotificationCustomData.reference(element, path: "\(path)[\(index)]") }
        }
    }

    /// An edit: an object, or a JSON object in a string (FCM data values are
    /// strings), with a string `body` and, optionally, a string `title`. An
    /// edit without a body is no edit; a title that is not a string is left
    /// out, and the edit keeps the title shown.
    private mutating func edit(_ value: PayloadValue, path: String) -> NotificationEdit? {
        let expected = "an object with a body, or a JSON object in a string"
        let fields: [String: PayloadValue]
        switch value {
        case .null:
            return nil
        case .object(let object):
            fields = object
        case .string(let text):
            guard let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else {
                diagnostics.append(.wrongType(key: path, expected: expected, found: "a string that is not JSON"))
                return nil
            }
            guard case .object(let object) = PayloadValue(parsed) else {
                diagnostics.append(.wrongType(key: path, expected: expected, found: "a string holding \(PayloadValue(parsed).kind)"))
                return nil
            }
            fields = object
        default:
            diagnostics.append(.wrongType(key: path, expected: expected, found: value.kind))
            return nil
        }
        let body: String
        switch fields["body"] ?? .null {
        case .string(let text):
            body = text
        case .null:
            diagnostics.append(.invalidValue(key: Self.path(path, "body"), reason: "an edit needs a body"))
            return nil
        case let other:
            diagnostics.append(.wrongType(key: Self.path(path, "body"), expected: "a string", found: other.kind))
            return nil
        }
        switch fields["title"] ?? .null {
        case .string(let title):
            return NotificationEdit(title: title, body: body)
        case .null:
            return NotificationEdit(body: body)
        case let other:
            diagnostics.append(.wrongType(key: Self.path(path, "title"), expected: "a string", found: other.kind))
            return NotificationEdit(body: body)
        }
    }

    /// The threads of a retraction: one thread id (a string or an integer),
    /// an array of them, or a JSON array in a string (FCM data values are
    /// strings). A string that is not a JSON array is one thread id.
    private mutating func threads(_ value: PayloadValue, path: String) -> [String] {
        let elements: [PayloadValue]
        switch value {
        case .array(let array):
            elements = array
        case .string(let text):
            if let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
                case .array(let array) = PayloadValue(parsed)
            {
                elements = array
            } else {
                elements = [value]
            }
        default:
            elements = [value]
        }
        let single = elements.count == 1 && value == elements[0]
        return elements.enumerated().compactMap { index, element in
            diagnosing { () throws(RetractPayloadError) in
                try NotificationCustomData.thread(element, path: single ? path : "\(path)[\(index)]")
            }
        }
    }

    /// The value `read` returns, or nil with its error kept as a diagnostic.
    private mutating func diagnosing<Value>(_ read: () throws(RetractPayloadError) -> Value?) -> Value? {
        do {
            return try read()
        } catch {
            diagnostics.append(error)
            return nil
        }
    }

    /// `key` inside the object at `path`; top-level keys have no prefix.
    static func path(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    // MARK: - Parsing

    /// The custom data object in a dictionary, a JSON string or JSON `Data`.
    private static func object(fromUserInfoValue value: Any, path: String) throws(RetractPayloadError) -> [String: Any] {
        let parsed: Any
        switch value {
        case let dictionary as [AnyHashable: Any]:
            return stringKeyed(dictionary)
        case let string as String:
            parsed = try parse(Data(string.utf8), path: path)
        case let data as Data:
            parsed = try parse(data, path: path)
        default:
            throw .wrongType(key: path, expected: "an object, a JSON string or Data", found: PayloadValue(value).kind)
        }
        guard let dictionary = parsed as? [AnyHashable: Any] else {
            throw .wrongType(key: path, expected: "a JSON object", found: PayloadValue(parsed).kind)
        }
        return stringKeyed(dictionary)
    }

    private static func parse(_ data: Data, path: String) throws(RetractPayloadError) -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw .invalidJSON(key: path, reason: reason)
        }
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
