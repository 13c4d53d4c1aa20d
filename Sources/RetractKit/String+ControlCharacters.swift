extension StringProtocol {
    /// The first C0 control character or DEL in the text, if any: what ids,
    /// bundle ids and HTTP header values must not hold, everywhere Retract
    /// checks them.
    package var firstControlCharacter: Unicode.Scalar? {
        unicodeScalars.first { $0.value < 0x20 || $0.value == 0x7F }
    }

    package var containsControlCharacters: Bool { firstControlCharacter != nil }
}
