import Foundation

extension Data {
    /// Base64url (RFC 4648 §5) without padding: JWTs, API keys and feed
    /// cursors. Package-only: not part of what apps import.
    package func base64URLEncodedString() -> String {
        // Byte by byte: Foundation's string replacing costs more than the encoding.
        var text: [UInt8] = []
        text.reserveCapacity((count + 2) / 3 * 4)
        for byte in base64EncodedData() where byte != UInt8(ascii: "=") {
            switch byte {
            case UInt8(ascii: "+"): text.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): text.append(UInt8(ascii: "_"))
            default: text.append(byte)
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Reads base64url with or without padding; nil for anything else.
    package init?(base64URLEncoded text: some StringProtocol) {
        var base64: [UInt8] = []
        base64.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            default: base64.append(byte)
            }
        }
        while base64.count % 4 != 0 { base64.append(UInt8(ascii: "=")) }
        self.init(base64Encoded: Data(base64))
    }
}
