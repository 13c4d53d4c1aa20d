/// Hex digits as the package reads them: device tokens, and the `\uXXXX`
/// escapes of JSON (the APNs client's body check and the simulator's).
package enum HexDigits {
    /// The value of one hex digit, either case; nil for any other byte.
    @inlinable
    package static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The four hex digits at `position` of `bytes` as one UTF-16 unit, as in
    /// a JSON `\u` escape; nil when fewer than four bytes are left or one is
    /// not a hex digit.
    @inlinable
    package static func unit(in bytes: UnsafeRawBufferPointer, at position: Int) -> UInt16? {
        guard position >= 0, position + 4 <= bytes.count else { return nil }
        var unit: UInt16 = 0
        for index in position..<position + 4 {
            guard let digit = value(of: bytes[index]) else { return nil }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }
}
