import Foundation

extension UUID {
    /// Parses `8-4-4-4-12` hex digits, either case. Foundation's parser goes
    /// through `sscanf` on Linux, which shows in a profile at one call per push.
    init?(hyphenatedHex text: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var high: UInt8?
        var index = 0
        for character in text.utf8 {
            defer { index += 1 }
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard index == 36, bytes.count == 16 else { return nil }
        self.init(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            )
        )
    }
}
