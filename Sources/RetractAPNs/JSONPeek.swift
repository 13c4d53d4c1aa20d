import RetractKit

/// Reads just enough of a JSON document to answer one question, without
/// building objects: request validation runs for every push.
///
/// It is not a validator. Values it skips are only checked for balanced
/// brackets and terminated strings; anything it cannot follow is `nil`.
enum JSONPeek {
    /// The keys of the object stored under `name` in a top-level object, or
    /// nil when the document is not an object or has no object under `name`.
    static func keysOfTopLevelObject(named name: String, in bytes: UnsafeRawBufferPointer) -> [String]? {
        var scanner = Scanner(bytes: bytes)
        var found: [String]?
        let complete = scanner.object { scanner, key in
            if key == name, found == nil {
                var keys: [String] = []
                guard
                    scanner.object(eachMember: { scanner, key in
                        keys.append(key)
                        return scanner.skipValue()
                    })
                else { return false }
                found = keys
                return true
            }
            return scanner.skipValue()
        }
        guard complete, scanner.atEnd else { return nil }
        return found
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var atEnd: Bool {
            mutating get {
                skipWhitespace()
                return position == bytes.count
            }
        }

        private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        private mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
        }

        private mutating func consume(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard current == byte else { return false }
            position += 1
            return true
        }

        /// Reads an object, calling `eachMember` with the scanner at each value.
        mutating func object(eachMember: (inout Scanner, String) -> Bool) -> Bool {
            guard consume(UInt8(ascii: "{")) else { return false }
            if consume(UInt8(ascii: "}")) { return true }
            repeat {
                skipWhitespace()
                guard let key = string(), consume(UInt8(ascii: ":")), eachMember(&self, key) else { return false }
            } while consume(UInt8(ascii: ","))
            return consume(UInt8(ascii: "}"))
        }

        /// Skips one value of any kind.
        mutating func skipValue() -> Bool {
            skipWhitespace()
            guard let first = current else { return false }
            if first == UInt8(ascii: "\"") { return skipString() }
            guard first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else {
                // A number or literal: runs until a delimiter.
                let start = position
                while let byte = current, !Self.delimiters.contains(byte) { position += 1 }
                return position > start
            }
            var depth = 0
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    guard skipString() else { return false }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 {
                        position += 1
                        return true
                    }
                default:
                    break
                }
                position += 1
            }
            return false
        }

        /// Moves past a string without reading it.
        private mutating func skipString() -> Bool {
            guard current == UInt8(ascii: "\"") else { return false }
            position += 1
            while let byte = current {
                position += 1
                if byte == UInt8(ascii: "\"") { return true }
                if byte == UInt8(ascii: "\\") { position += 1 }
            }
            return false
        }

        /// Reads a string at the current position, decoding escapes. Strings
        /// without escapes (nearly all) are made from their bytes in one step.
        mutating func string() -> String? {
            guard current == UInt8(ascii: "\"") else { return nil }
            position += 1
            let start = position
            while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") { position += 1 }
            guard let stop = current else { return nil }
            if stop == UInt8(ascii: "\"") {
                position += 1
                return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position - 1]), as: UTF8.self)
            }
            var utf8 = Array(bytes[start..<position])
            while let byte = current {
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: utf8, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = escape() else { return nil }
                    utf8.append(contentsOf: String(Character(escaped)).utf8)
                default:
                    utf8.append(byte)
                }
            }
            return nil
        }

        private mutating func escape() -> Unicode.Scalar? {
            guard let byte = current else { return nil }
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                guard let unit = hexQuad() else { return nil }
                if (0xD800..<0xDC00).contains(unit) {
                    // A high surrogate must be followed by an escaped low one.
                    guard current == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u")
                    else { return nil }
                    position += 2
                    guard let low = hexQuad(), (0xDC00..<0xE000).contains(low) else { return nil }
                    return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                }
                return Unicode.Scalar(unit)
            default:
                return nil
            }
        }

        private mutating func hexQuad() -> UInt32? {
            guard let unit = HexDigits.unit(in: bytes, at: position) else { return nil }
            position += 4
            return UInt32(unit)
        }

        private static let delimiters: Set<UInt8> = [
            UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09,
        ]
    }
}
