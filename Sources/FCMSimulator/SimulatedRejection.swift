import Foundation

/// An error answer as FCM writes it: Google's error object, with FCM's error
/// code and the blamed field in `details`.
struct SimulatedRejection: Error, Hashable {
    var httpStatus: Int
    var status: String
    var errorCode: String?
    var message: String
    var field: String?
    var retryAfter: Int?

    static func invalidArgument(_ field: String, _ message: String) -> SimulatedRejection {
        SimulatedRejection(httpStatus: 400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", message: message, field: field)
    }

    static func unauthenticated(_ message: String) -> SimulatedRejection {
        SimulatedRejection(httpStatus: 401, status: "UNAUTHENTICATED", message: message)
    }

    init(httpStatus: Int, status: String, errorCode: String? = nil, message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.httpStatus = httpStatus
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    init(_ fault: FCMFault) {
        switch fault {
        case .unregistered:
            self.init(httpStatus: 404, status: "NOT_FOUND", errorCode: "UNREGISTERED", message: "Requested entity was not found.")
        case .invalidArgument(let field):
            self = .invalidArgument(field, "Request contains an invalid argument.")
        case .quotaExceeded(let retryAfter):
            self.init(
                httpStatus: 429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", message: "Quota exceeded for the device.",
                retryAfter: retryAfter)
        case .unavailable(let retryAfter):
            self.init(
                httpStatus: 503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE", message: "The service is currently unavailable.",
                retryAfter: retryAfter)
        case .internalError:
            self.init(httpStatus: 500, status: "INTERNAL", errorCode: "INTERNAL", message: "Internal error encountered.")
        case .thirdPartyAuthError:
            self.init(
                httpStatus: 401, status: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR",
                message: "Auth error from APNS or Web Push Service")
        case .senderIDMismatch:
            self.init(httpStatus: 403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", message: "SenderId mismatch")
        case .unauthenticated:
            self = .unauthenticated("Request had invalid authentication credentials.")
        }
    }

    /// The code statistics count it under.
    var code: String { errorCode ?? status }

    var body: Data {
        var details: [[String: Any]] = []
        if let errorCode { details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode]) }
        if let field {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [["field": field, "description": message]],
            ])
        }
        var error: [String: Any] = ["code": httpStatus, "message": message, "status": status]
        if !details.isEmpty { error["details"] = details }
        return (try? JSONSerialization.data(withJSONObject: ["error": error], options: [.sortedKeys])) ?? Data()
    }
}
