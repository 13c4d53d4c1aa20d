import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import RetractHTTP2

/// Why a message was not sent.
public enum FCMError: Error, CustomStringConvertible, Sendable, Hashable {
    /// `messages:send` answered with an error.
    case rejected(FCMRejection)
    /// The token endpoint would not give an access token. `status` is nil
    /// when no answer came at all.
    case accessTokenRefused(status: Int?, reason: String)
    /// The connection failed or no answer came in time: the message may have reached FCM.
    case connection(String)
    /// FCM (or its token endpoint) could not be connected to: the message never left.
    case unreachable(String)
    /// The message cannot be sent as it is.
    case invalidMessage(String)
    /// The client was shut down.
    case clientShutdown

    public var description: String {
        switch self {
        case .rejected(let rejection): "\(rejection)"
        case .accessTokenRefused(let status?, let reason): "the token endpoint answered \(status): \(reason)"
        case .accessTokenRefused(nil, let reason): "no access token: \(reason)"
        case .connection(let problem): "connection: \(problem)"
        case .unreachable(let problem): "cannot connect to FCM: \(problem)"
        case .invalidMessage(let problem): "invalid message: \(problem)"
        case .clientShutdown: "the FCM client is shut down"
        }
    }
}

extension FCMError {
    /// A failure of the HTTP/2 connection pool a message went through.
    init(connection error: HTTP2TransportError) {
        switch error {
        case .clientShutdown: self = .clientShutdown
        case .connectFailed(let reason): self = .unreachable(reason)
        case .clientCertificateRefused(let alert): self = .unreachable("FCM refused the client certificate (\(alert))")
        case .timedOut: self = .connection("no answer from FCM within the timeout")
        case .connectionLost: self = .connection("the connection to FCM closed while the message was in flight")
        }
    }

    /// What AsyncHTTPClient's failure to send a request means: a request that
    /// never got a connection (refused, timed out, or the TLS handshake
    /// failed) never left, and is ``unreachable(_:)``; anything later may
    /// have reached the server.
    init(sending error: any Error) {
        switch error {
        case let error as HTTPClientError where error == .alreadyShutdown:
            self = .clientShutdown
        case let error as HTTPClientError:
            let beforeConnecting: [HTTPClientError] = [.connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout]
            self = beforeConnecting.contains(error) ? .unreachable("\(error)") : .connection("\(error)")
        case is NIOConnectionError, is NIOSSLError, is BoringSSLError, ChannelError.connectTimeout:
            self = .unreachable("\(error)")
        case let error as IOError where [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT].contains(error.errnoCode):
            self = .unreachable("\(error)")
        default:
            self = .connection("\(error)")
        }
    }
}

/// An error answer of `messages:send`: Google's error object, with FCM's own
/// error code from its `details`.
///
/// ```json
/// {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
///   "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
/// ```
public struct FCMRejection: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status.
    public var httpStatus: Int
    /// The canonical status (`NOT_FOUND`, `INVALID_ARGUMENT`, ...), when the body had one.
    public var status: String?
    /// FCM's error code (`UNREGISTERED`, `QUOTA_EXCEEDED`, ...), when the body had one.
    public var errorCode: String?
    public var message: String?
    /// The field a `google.rpc.BadRequest` detail blames, such as `message.token`.
    public var field: String?
    /// The `Retry-After` header, in seconds.
    public var retryAfter: TimeInterval?

    public init(
        httpStatus: Int, status: String? = nil, errorCode: String? = nil, message: String? = nil, field: String? = nil,
        retryAfter: TimeInterval? = nil
    ) {
        self.httpStatus = httpStatus
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// Reads an error answer; a body that is not Google's error object still
    /// gives a rejection with the HTTP status.
    public init(httpStatus: Int, body: some Collection<UInt8>, retryAfterHeader: String?) {
        self.init(httpStatus: httpStatus, retryAfter: retryAfterHeader.flatMap(Self.seconds(retryAfter:)))
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return }
        status = error["status"] as? String
        message = error["message"] as? String
        for detail in error["details"] as? [[String: Any]] ?? [] {
            let type = detail["@type"] as? String ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError") { errorCode = detail["errorCode"] as? String }
            if type.hasSuffix("google.rpc.BadRequest"), let violation = (detail["fieldViolations"] as? [[String: Any]])?.first {
                field = violation["field"] as? String
            }
        }
    }

    /// What to do about it.
    ///
    /// A token is dead only when FCM says so in its own error detail
    /// (`UNREGISTERED`, sent with status `NOT_FOUND`): a bare 404 (a wrong
    /// project or endpoint) must not mark every device dead.
    /// `SENDER_ID_MISMATCH` is about one token (it belongs to another
    /// project), so it fails that device only; answers about the app's own
    /// credentials stop its sending.
    public var disposition: FCMDisposition {
        switch errorCode ?? status ?? "" {
        case "UNREGISTERED": return .tokenDead
        case "NOT_FOUND": return errorCode == nil ? .permanent : .tokenDead
        case "SENDER_ID_MISMATCH": return .permanent
        case "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED": return .authenticationFailed
        case "UNAUTHENTICATED": return .refreshAccessToken
        case "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL": return .retry
        case "INVALID_ARGUMENT": return .permanent
        default:
            switch httpStatus {
            case 401: return .refreshAccessToken
            case 403: return .authenticationFailed
            case 429, 500...: return .retry
            default: return .permanent
            }
        }
    }

    /// The code, the field and Google's message, in that order: the reason a retraction's account shows.
    public var description: String {
        var text = "FCM \(errorCode ?? status ?? "HTTP \(httpStatus)")"
        if let field { text += " (\(field))" }
        if let message, !message.isEmpty { text += ": \(message)" }
        return text
    }

    /// The longest `Retry-After` taken as given; a longer one is read as this.
    public static let longestRetryAfter: TimeInterval = 3600

    /// `Retry-After` in seconds, at most ``longestRetryAfter``; the HTTP-date form is read too.
    static func seconds(retryAfter header: String) -> TimeInterval? {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds >= 0, trimmed.allSatisfy(\.isNumber) { return min(seconds, longestRetryAfter) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: trimmed).map { min(max(0, $0.timeIntervalSinceNow), longestRetryAfter) }
    }
}

/// What the sender of a rejected message should do.
public enum FCMDisposition: Sendable, Hashable {
    /// The token will never work again.
    case tokenDead
    /// The project's credentials (or the APNs key uploaded to Firebase) are refused.
    case authenticationFailed
    /// The access token was refused: get a new one and send again (the client does it once).
    case refreshAccessToken
    /// Try again later, after `Retry-After` when the answer had one.
    case retry
    /// Sending the same message again will not help.
    case permanent
}
