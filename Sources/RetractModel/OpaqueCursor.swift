import Foundation
import RetractKit

/// The text of a cursor: a tag and fields joined by dots, in base64url, so
/// that a caller keeps it as it is rather than building one.
package enum OpaqueCursor {
    package static func encode(_ fields: [String]) -> String { Data(fields.joined(separator: ".").utf8).base64URLEncodedString() }

    /// The `count` fields of a cursor tagged `tag` (the last takes the
    /// rest of the text, dots included).
    package static func fields(
        of encoded: String, tag: String, count: Int, of what: String, maximumLength: Int
    ) throws(StoreError) -> [Substring] {
        guard encoded.utf8.count <= maximumLength, let data = Data(base64URLEncoded: encoded),
            let text = String(data: data, encoding: .utf8)
        else { throw invalid(encoded, of: what) }
        let parts = text.split(separator: ".", maxSplits: count - 1, omittingEmptySubsequences: false)
        guard parts.count == count, parts[0] == tag else { throw invalid(encoded, of: what) }
        return parts
    }

    package static func invalid(_ encoded: String, of what: String) -> StoreError {
        StoreError(.invalidInput, "cursor: \"\(encoded.prefix(40))\" is not a cursor of \(what) this server gave")
    }
}
