import Foundation

/// Tests/Vectors/payloads.json: the payload cases every reader of retraction
/// pushes is checked against (RetractKit, `retract match`, and client
/// implementations in other languages).
public struct PayloadVectors: Sendable {
    /// One case: a push, what the device shows, and what reading the push gives.
    public struct Case: Sendable {
        public var name: String
        /// The push's `userInfo`, as the file writes it.
        public var pushJSON: String
        /// The notifications showing, as the file writes them: `[{"identifier", "userInfo"}]`.
        public var deliveredJSON: String
        public var retraction: Bool
        public var references: [String]
        /// The conversations the push retracts (`pushNotificationThreadIds`); empty when the case gives none.
        public var threads: [String]
        /// Identifiers removed, in any order.
        public var remove: [String]
        /// Keys of the values that could not be read, in any order.
        public var diagnostics: [String]
        /// The edit the push makes (`pushNotificationEdit`); nil when it makes none.
        public var edit: Edit?
        /// Identifiers (Android: names) showing the edit's text after it, in any order.
        public var edited: [String]
        /// The account the push names; nil when the case gives none.
        public var account: String?
        /// Android conversation notifications re-posted, by name, with their messages after the push; empty when the case gives none.
        public var rebuilt: [Rebuilt]
        /// The badge the push gives (`pushNotificationBadge`, a read's); nil when the case gives none.
        public var badge: Int?
    }

    /// A case's `"rebuilt"` entry: a conversation and its messages (reference, text) after the push, in order.
    public struct Rebuilt: Sendable, Hashable {
        public var name: String
        public var messages: [Message]

        public struct Message: Sendable, Hashable {
            public var reference: String
            public var text: String

            public init(reference: String, text: String) {
                self.reference = reference
                self.text = text
            }
        }

        public init(name: String, messages: [Message]) {
            self.name = name
            self.messages = messages
        }
    }

    /// A case's `"edit": {"title": string or null, "body": string}`.
    public struct Edit: Sendable, Hashable {
        public var title: String?
        public var body: String

        public init(title: String?, body: String) {
            self.title = title
            self.body = body
        }
    }

    public var cases: [Case]

    public static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("payloads.json")

    public static func load() throws -> PayloadVectors {
        let data = try Data(contentsOf: file)
        let object = try JSONSerialization.jsonObject(with: data)
        guard let cases = (object as? [String: Any])?["cases"] as? [[String: Any]] else {
            throw Malformed(detail: "\(file.path): expected {\"cases\": [...]}")
        }
        // The pushes are handed on as the file writes them, not as Foundation
        // would write them again: `235.0` must stay `235.0`.
        let text = String(decoding: data, as: UTF8.self)
        let pushes = rawValues(of: "push", in: text)
        let delivered = rawValues(of: "delivered", in: text)
        guard pushes.count == cases.count, delivered.count == cases.count else {
            throw Malformed(detail: "\(file.path): every case needs one \"push\" and one \"delivered\"")
        }
        return PayloadVectors(cases: try cases.indices.map { try Case(cases[$0], push: pushes[$0], delivered: delivered[$0]) })
    }

    public struct Malformed: Error, CustomStringConvertible {
        public var detail: String
        public var description: String { detail }
    }
}

extension PayloadVectors.Case {
    init(_ object: [String: Any], push: String, delivered: String) throws {
        let name = object["name"] as? String ?? "?"
        func field<Value>(_ key: String, as type: Value.Type) throws -> Value {
            guard let value = object[key] as? Value else {
                throw PayloadVectors.Malformed(detail: "case \"\(name)\": \"\(key)\" is missing or not \(Value.self)")
            }
            return value
        }
        // The raw text found for the case must be the case's own value.
        func canonical(_ value: Any) throws -> Data {
            try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        }
        for (key, raw) in [("push", push), ("delivered", delivered)] {
            let parsed = try JSONSerialization.jsonObject(with: Data(raw.utf8))
            guard try canonical(parsed) == canonical(try field(key, as: Any.self)) else {
                throw PayloadVectors.Malformed(detail: "case \"\(name)\": \"\(key)\" is not where it was looked for")
            }
        }
        self.init(
            name: name,
            pushJSON: push,
            deliveredJSON: delivered,
            retraction: try field("retraction", as: Bool.self),
            references: try field("references", as: [String].self),
            threads: object["threads"] == nil ? [] : try field("threads", as: [String].self),
            remove: try field("remove", as: [String].self),
            diagnostics: try field("diagnostics", as: [String].self),
            edit: try object["edit"].map { _ in
                let edit = try field("edit", as: [String: Any].self)
                guard let body = edit["body"] as? String, edit["title"] is String || edit["title"] is NSNull else {
                    throw PayloadVectors.Malformed(detail: "case \"\(name)\": \"edit\" needs a string body and a title, a string or null")
                }
                return PayloadVectors.Edit(title: edit["title"] as? String, body: body)
            },
            edited: object["edited"] == nil ? [] : try field("edited", as: [String].self),
            account: object["account"] == nil ? nil : try field("account", as: String.self),
            rebuilt: object["rebuilt"] == nil
                ? []
                : try field("rebuilt", as: [[String: Any]].self).map { entry in
                    guard let name = entry["name"] as? String, let messages = entry["messages"] as? [[String: String]],
                        messages.allSatisfy({ $0["reference"] != nil && $0["text"] != nil })
                    else {
                        throw PayloadVectors.Malformed(
                            detail: "case \"\(name)\": each \"rebuilt\" needs a name and messages of reference and text")
                    }
                    return PayloadVectors.Rebuilt(
                        name: name, messages: messages.map { .init(reference: $0["reference"] ?? "", text: $0["text"] ?? "") })
                },
            badge: object["badge"] == nil ? nil : try field("badge", as: Int.self)
        )
    }
}

/// The raw text of every value of `"key":` in a JSON text, in order: the
/// object or array that follows, found by counting brackets outside strings.
private func rawValues(of key: String, in text: String) -> [String] {
    let bytes = Array(text.utf8)
    let marker = Array("\"\(key)\":".utf8)
    var values: [String] = []
    var index = 0
    while index + marker.count <= bytes.count {
        guard bytes[index..<index + marker.count].elementsEqual(marker) else {
            index += 1
            continue
        }
        var position = index + marker.count
        while position < bytes.count,
            [UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")].contains(bytes[position])
        {
            position += 1
        }
        // Only objects and arrays are looked for; anything else is left for the check against the parsed case.
        guard position < bytes.count, bytes[position] == UInt8(ascii: "{") || bytes[position] == UInt8(ascii: "[") else {
            index = position
            continue
        }
        let start = position
        var depth = 0
        var inString = false
        var escaped = false
        repeat {
            let byte = bytes[position]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                depth -= 1
            }
            position += 1
        } while depth > 0 && position < bytes.count
        values.append(String(decoding: bytes[start..<position], as: UTF8.self))
        index = position
    }
    return values
}
