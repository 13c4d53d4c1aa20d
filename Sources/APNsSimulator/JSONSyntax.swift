import RetractKit

/// Whether a push body is one JSON object (RFC 8259), checked without
/// building it.
///
/// The simulator checks every body it accepts, and only an alert's `aps` is
/// read (``SimulatorRules``). Building the whole object with
/// `JSONSerialization`, a string for each of a body's references, was a
/// sixth of the simulator's CPU time in `scripts/bench retract --history`
/// (docs/performance.md). This reads the same grammar and makes nothing;
/// `JSONSyntaxTests` checks it against `JSONSerialization`.
package enum JSONSyntax {
    /// Deeper nesting is refused, as `JSONSerialization` refuses it.
    package static let maximumDepth = 512

    package static func isObject(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        guard reader.current == UInt8(ascii: "{"), reader.value(depth: 0) else { return false }
        reader.skipWhitespace()
        guard reader.position == bytes.count else { return false }
        // Outside strings the grammar takes only ASCII; inside, the bytes must be UTF-8.
        return !reader.sawNonASCII || String(validating: bytes, as: UTF8.self) != nil
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        var sawNonASCII = false

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
        }

        /// Reads one value starting at the current byte.
        mutating func value(depth: Int) -> Bool {
            guard let byte = current else { return false }
            switch byte {
            case UInt8(ascii: "{"): return container(closing: UInt8(ascii: "}"), depth: depth + 1)
            case UInt8(ascii: "["): return container(closing: UInt8(ascii: "]"), depth: depth + 1)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return false
            }
        }

        /// An object (members `"key": value`) or an array, at its opening bracket.
        mutating func container(closing: UInt8, depth: Int) -> Bool {
            guard depth <= JSONSyntax.maximumDepth else { return false }
            let isObject = closing == UInt8(ascii: "}")
            position += 1
            skipWhitespace()
            if current == closing {
                position += 1
                return true
            }
            while true {
                if isObject {
                    guard current == UInt8(ascii: "\""), string() else { return false }
                    skipWhitespace()
                    guard current == UInt8(ascii: ":") else { return false }
                    position += 1
                    skipWhitespace()
                }
                guard value(depth: depth) else { return false }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","):
                    position += 1
                    skipWhitespace()
                case closing:
                    position += 1
                    return true
                default:
                    return false
                }
            }
        }

        /// A string, at its opening quote: no raw control characters, only
        /// JSON's escapes, and surrogates escaped only in pairs.
        mutating func string() -> Bool {
            position += 1
            while let byte = current {
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard escape() else { return false }
                case ..<0x20:
                    return false
                case 0x80...:
                    sawNonASCII = true
                default:
                    continue
                }
            }
            return false
        }

        /// The rest of an escape, after its backslash.
        private mutating func escape() -> Bool {
            guard let byte = current else { return false }
            position += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                UInt8(ascii: "r"), UInt8(ascii: "t"):
                return true
            case UInt8(ascii: "u"):
                guard let unit = hexUnit() else { return false }
                switch unit {
                case 0xD800...0xDBFF:
                    // A high surrogate stands only before a low one.
                    guard current == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                        return false
                    }
                    position += 2
                    guard let low = hexUnit(), (0xDC00...0xDFFF).contains(low) else { return false }
                    return true
                case 0xDC00...0xDFFF:
                    return false
                default:
                    return true
                }
            default:
                return false
            }
        }

        /// Four hex digits.
        private mutating func hexUnit() -> UInt16? {
            guard let unit = HexDigits.unit(in: bytes, at: position) else { return nil }
            position += 4
            return unit
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, and a
        /// value a `Double` holds: `JSONSerialization` refuses one too large
        /// for it, such as `1e729`.
        mutating func number() -> Bool {
            let start = position
            guard numberSyntax() else { return false }
            // Only an exponent or many digits can overflow; push bodies' numbers rarely have either.
            let token = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
            guard token.count > 15 || token.contains(UInt8(ascii: "e")) || token.contains(UInt8(ascii: "E")) else { return true }
            return Double(String(decoding: token, as: UTF8.self))?.isFinite ?? false
        }

        private mutating func numberSyntax() -> Bool {
            if current == UInt8(ascii: "-") { position += 1 }
            guard let first = current else { return false }
            switch first {
            case UInt8(ascii: "0"):
                position += 1
            case UInt8(ascii: "1")...UInt8(ascii: "9"):
                skipDigits()
            default:
                return false
            }
            if current == UInt8(ascii: ".") {
                position += 1
                guard skipDigits() else { return false }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                position += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
                guard skipDigits() else { return false }
            }
            return true
        }

        /// Whether there was at least one digit.
        @discardableResult
        private mutating func skipDigits() -> Bool {
            let start = position
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
            return position > start
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            for index in 0..<count where bytes[position + index] != word.utf8Start[index] { return false }
            position += count
            return true
        }
    }
}
