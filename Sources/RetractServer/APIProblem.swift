import Foundation
import HTTPTypes
import Hummingbird
import RetractCore

/// An answer that is not a success, as `application/problem+json` (RFC 9457)
/// with a stable `type` a caller can switch on, and the offending field when
/// one field is at fault.
package struct APIProblem: Error, HTTPResponseError, Sendable, Equatable {
    /// The stable part of `type`: `https://retract.dev/problems/<kind>`.
    package struct Kind: Hashable, Sendable {
        package let slug: String
        package let status: HTTPResponse.Status
        package let title: String

        package static let invalidJSON = Kind("invalid-json", .badRequest, "The body is not the JSON this endpoint takes")
        package static let unauthorized = Kind("unauthorized", .unauthorized, "No valid API key")
        package static let forbidden = Kind("forbidden", .forbidden, "The API key lacks the scope this needs")
        package static let notFound = Kind("not-found", .notFound, "Not found")
        package static let methodNotAllowed = Kind("method-not-allowed", .methodNotAllowed, "Method not allowed here")
        package static let idempotencyConflict = Kind(
            "idempotency-conflict", .conflict, "The Idempotency-Key was used for a different request")
        package static let idempotencyInProgress = Kind(
            "idempotency-in-progress", .conflict, "The first request with this Idempotency-Key is still running")
        package static let appExists = Kind("app-exists", .conflict, "An app of that name exists")
        package static let stateConflict = Kind(
            "state-conflict", .conflict, "The retraction's state does not allow this")
        package static let payloadTooLarge = Kind("payload-too-large", .contentTooLarge, "The body is too large")
        package static let unsupportedMediaType = Kind("unsupported-media-type", .unsupportedMediaType, "The body must be application/json")
        package static let invalidField = Kind("invalid-field", .unprocessableContent, "A field's value is not acceptable")
        package static let appCredentials = Kind(
            "app-credentials", .unprocessableContent, "The app's APNs or FCM credentials cannot be used")
        package static let tooManyRequests = Kind("too-many-requests", .tooManyRequests, "Too many requests for this API key")
        package static let feedPaced = Kind(
            "feed-paced", .serviceUnavailable, "The server is sending a retraction and paces the device feed meanwhile")
        package static let retractionLost = Kind(
            "retraction-lost", .gone, "The retraction was accepted, then lost by the database in a failover")
        package static let readTimeout = Kind("read-timeout", .serviceUnavailable, "The read took too long and was stopped")
        package static let databaseUnavailable = Kind("database-unavailable", .serviceUnavailable, "The database is unavailable")
        package static let notReady = Kind("not-ready", .serviceUnavailable, "Not ready")
        package static let internalError = Kind("internal", .internalServerError, "Internal error")

        private init(_ slug: String, _ status: HTTPResponse.Status, _ title: String) {
            self.slug = slug
            self.status = status
            self.title = title
        }

        package var type: String { "https://retract.dev/problems/\(slug)" }
    }

    package var kind: Kind
    package var detail: String
    /// The field at fault: `tokens[3]`, `[1].reference`, a header or parameter name.
    package var field: String?
    /// Extra headers: `Retry-After`, `WWW-Authenticate`, `Allow`.
    package var headers: HTTPFields

    package init(_ kind: Kind, _ detail: String, field: String? = nil, headers: HTTPFields = [:]) {
        self.kind = kind
        self.detail = detail
        self.field = field
        self.headers = headers
    }

    package var status: HTTPResponse.Status { kind.status }

    package static func == (lhs: APIProblem, rhs: APIProblem) -> Bool {
        lhs.kind == rhs.kind && lhs.detail == rhs.detail && lhs.field == rhs.field
    }

    /// The body, as the spec's `Problem` schema has it.
    struct Body: Codable, Equatable {
        var type: String
        var title: String
        var status: Int
        var detail: String
        var field: String?
        var requestId: String?
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        response(requestID: request.headers[.requestID])
    }

    func response(requestID: String?) -> Response {
        let body = Body(
            type: kind.type, title: kind.title, status: Int(kind.status.code), detail: detail, field: field, requestId: requestID)
        var headers = headers
        headers[.contentType] = "application/problem+json"
        return Response(status: kind.status, headers: headers, body: .init(byteBuffer: APIJSON.buffer(body)))
    }
}

extension APIProblem {
    /// A field's value that is not acceptable.
    static func invalid(_ field: String, _ detail: String) -> APIProblem {
        APIProblem(.invalidField, "\(field): \(detail)", field: field)
    }

    static func databaseUnavailable(_ detail: String, retryAfter seconds: Int = 5) -> APIProblem {
        APIProblem(.databaseUnavailable, detail, headers: [.retryAfter: "\(seconds)"])
    }
}

extension HTTPField.Name {
    static let requestID = Self("X-Request-Id")!
    static let idempotencyKey = Self("Idempotency-Key")!
    static let idempotentReplayed = Self("Idempotent-Replayed")!
}
