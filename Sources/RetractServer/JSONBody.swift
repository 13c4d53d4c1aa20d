import Foundation
import Hummingbird
import NIOCore

/// Reads a request's JSON body: the content type, the size limit, and
/// decoding errors turned into problems that name the field.
enum JSONBody {
    /// Collects the body, refusing one over `limit` bytes or not JSON.
    static func collect(_ request: inout Request, limit: Int) async throws(APIProblem) -> ByteBuffer {
        if let type = request.headers[.contentType], !isJSON(type) {
            throw APIProblem(.unsupportedMediaType, "Content-Type \"\(type.prefix(100))\": send application/json", field: "Content-Type")
        }
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIProblem(.payloadTooLarge, "the body is over the \(limit)-byte limit")
        } catch {
            throw APIProblem(.invalidJSON, "the body could not be read: \(error)")
        }
    }

    private static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }

    /// The first character that is not white space: `{` or `[` tells an
    /// object from an array before decoding, so errors name the right field.
    static func firstCharacter(of body: ByteBuffer) -> UInt8? {
        body.readableBytesView.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
    }

    static func decode<Value: Decodable>(_: Value.Type, from body: ByteBuffer) throws(APIProblem) -> Value {
        do {
            return try decoder.decode(Value.self, from: body)
        } catch let error as DecodingError {
            throw problem(for: error)
        } catch {
            throw APIProblem(.invalidJSON, "the body is not JSON: \(error)")
        }
    }

    private static let decoder = JSONDecoder()

    static func problem(for error: DecodingError) -> APIProblem {
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key])
            return APIProblem(.invalidJSON, "\(field): missing", field: field)
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let field = path(context.codingPath)
            return APIProblem(
                .invalidJSON, "\(field.isEmpty ? "the body" : field): expected \(describe(type))", field: field.isEmpty ? nil : field)
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return APIProblem(.invalidJSON, "the body is not valid JSON") }
            return APIProblem(.invalidJSON, "\(field): \(context.debugDescription)", field: field)
        @unknown default:
            return APIProblem(.invalidJSON, "the body is not the JSON this endpoint takes")
        }
    }

    /// `tokens[3]`, `[1].reference`, `payload.aps`.
    static func path(_ keys: [any CodingKey]) -> String {
        var path = ""
        for key in keys {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += path.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return path
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Double.Type: "a number"
        case is [String].Type: "an array of strings"
        case is [Any].Type: "an array"
        default: "an object"
        }
    }
}
