import Foundation
import NIOCore

/// The one JSON coder setup of the API: ISO 8601 dates, sorted keys, no escaped slashes.
package enum APIJSON {
    package static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    package static func buffer(_ value: some Encodable) -> ByteBuffer {
        // Our own response types always encode; a failure here is a bug worth seeing.
        do {
            return ByteBuffer(data: try encoder.encode(value))
        } catch {
            return ByteBuffer(string: #"{"error":"the response could not be encoded"}"#)
        }
    }
}
