import Foundation
import RetractKit

/// An input from outside that is not acceptable, and the field it came in:
/// `reference`, `topic`, `keyPath`. The API answers with the field; its
/// description names it.
package struct FieldProblem: Error, Hashable, Sendable, CustomStringConvertible {
    package var field: String
    package var message: String

    package init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    package var description: String { "\(field): \(message)" }
}

extension ReferenceID {
    /// A reference read from outside input, checked once here: 1 to
    /// ``Delivery/maximumReferenceLength`` UTF-8 bytes, no control characters.
    package init(validating text: String, field: String = "reference") throws(FieldProblem) {
        let length = text.utf8.count
        if length == 0 || length > Delivery.maximumReferenceLength {
            throw FieldProblem(field, "\(length) bytes; a reference has 1 to \(Delivery.maximumReferenceLength)")
        }
        // Control characters have no place in an id, and would break log lines and the CLI's output.
        if let control = text.firstControlCharacter {
            throw FieldProblem(field, "a reference cannot hold control characters (U+\(String(format: "%04X", control.value)))")
        }
        self.init(text)
    }
}
