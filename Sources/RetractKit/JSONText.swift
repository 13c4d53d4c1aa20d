/// Writes JSON string literals byte by byte.
///
/// Retraction bodies are built for every device of a retraction, so they are
/// written directly instead of through an encoder, and each reference's
/// encoded size is known exactly while references are packed into bodies.
package enum JSONText {
    /// `string` as a JSON string literal, quotes included.
    package static func quoted(_ string: String) -> String {
        String(decoding: quotedBytes(string), as: UTF8.self)
    }

    /// `string` as a JSON string literal's bytes, quotes included.
    package static func quotedBytes(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        appendQuoted(string, to: &bytes)
        return bytes
    }

    package static func appendQuoted(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(hexDigit(byte >> 4))
                bytes.append(hexDigit(byte & 0x0F))
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
