import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import RetractCore
import RetractModel
import RetractStore

/// Wraps every request: gives it an id, turns every error into a problem
/// answer, counts and times it by route, and logs one line.
struct APIRequestMiddleware: RouterMiddleware {
    typealias Context = APIContext

    let routes: RouteTable
    let metrics: HTTPMetrics

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let requestID = Self.requestID(given: request.headers[.requestID]) ?? context.id
        var context = context
        // Hummingbird's own id is in the log metadata already; a caller's replaces it.
        if requestID != context.id { context.logger[metadataKey: "hb.request.id"] = "\(requestID)" }
        var response: Response
        var problem: APIProblem?
        do {
            response = try await next(request, context)
        } catch {
            let mapped = self.problem(for: error, request: request)
            if mapped.kind == .internalError {
                context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            problem = mapped
            response = mapped.response(requestID: requestID)
        }
        response.headers[.requestID] = requestID
        let route = context.endpointPath ?? "unmatched"
        let elapsed = ContinuousClock.now - start
        metrics.record(route: route, method: request.method.rawValue, status: Int(response.status.code), duration: elapsed)
        // The line's metadata only when it is logged: every request pays for it otherwise.
        // A paced feed call is the server keeping its share for the pushes, not a fault (the metric counts them).
        let level: Logger.Level = response.status.code >= 500 && problem?.kind != .feedPaced ? .warning : .info
        guard context.logger.logLevel <= level else { return response }
        // The route, not the path: a path can hold a device token.
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)", "route": "\(context.endpointPath ?? "unmatched")", "status": "\(response.status.code)",
            "ms": "\(Int((elapsed.inSeconds * 1000).rounded()))",
        ]
        if let caller = context.notes.caller { metadata["key"] = "\(caller)" }
        // Details quote what the caller sent: one line, whatever it held.
        if let problem { metadata["problem"] = "\(problem.kind.slug): \(problem.detail.debugDescription.dropFirst().dropLast())" }
        context.logger.log(level: level, "request", metadata: metadata)
        return response
    }

    /// The caller's `X-Request-Id` when it is a sane token, so ids carry across services.
    static func requestID(given text: String?) -> String? {
        guard let text, (1...128).contains(text.utf8.count) else { return nil }
        let allowed = text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || [0x2D, 0x2E, 0x5F].contains(byte)
        }
        return allowed ? text : nil
    }

    /// What an error means for the caller. Only ``APIProblem`` and the
    /// engine's and store's errors carry meaning; anything else is a bug (500).
    func problem(for error: any Error, request: Request) -> APIProblem {
        switch error {
        case let problem as APIProblem:
            return problem
        case let error as RetractError:
            return Self.problem(for: error)
        case let error as StoreError:
            return Self.problem(for: error)
        case is NIOTooManyBytesError:
            return APIProblem(.payloadTooLarge, "the body is too large")
        case let error as HTTPError where error.status == .notFound:
            let allowed = routes.methods(matching: request.uri.path)
            if !allowed.isEmpty {
                return APIProblem(
                    .methodNotAllowed, "\(request.method.rawValue) \(request.uri.path): use \(allowed.joined(separator: ", "))",
                    headers: [.allow: allowed.joined(separator: ", ")])
            }
            return APIProblem(.notFound, "no such endpoint: \(request.uri.path.prefix(200)); see /openapi.yaml")
        case let error as HTTPError where error.status.code < 500:
            return APIProblem(.invalidJSON, error.body ?? "\(error.status)")
        default:
            return APIProblem(.internalError, "an internal error; the server's log has it under this request's id")
        }
    }

    static func problem(for error: RetractError) -> APIProblem {
        switch error.code {
        case .invalidInput: APIProblem(.invalidField, error.message, field: error.field)
        case .unknownApp, .unknownReference, .unknownRetraction, .unknownKey: APIProblem(.notFound, error.message, field: error.field)
        case .appExists: APIProblem(.appExists, error.message, field: error.field)
        // Where the app's files are on the server is an operator's business (POST /v1/apps, for admins, says it).
        case .credentials: APIProblem(.appCredentials, error.publicMessage, field: error.field)
        case .store: error.storeError.map(problem(for:)) ?? APIProblem(.internalError, "a database error")
        }
    }

    static func problem(for error: StoreError) -> APIProblem {
        switch error.code {
        case .connectionLost: .databaseUnavailable("the database is unavailable; try again shortly")
        case .invalidInput, .checkViolation: APIProblem(.invalidField, error.message)
        case .readTimeout:
            APIProblem(
                .readTimeout,
                "this read took longer than the server allows (--read-timeout) and was stopped; ask for less: one app, a smaller limit",
                headers: [.retryAfter: "5"])
        case .canceled: .databaseUnavailable("the database cancelled this request's statement; try again shortly")
        case .notFound: APIProblem(.notFound, error.message)
        case .idempotencyConflict: APIProblem(.idempotencyConflict, error.message)
        case .stateConflict: APIProblem(.stateConflict, error.message)
        case .selfApproval: APIProblem(.forbidden, error.message)
        // A schema this binary does not know, or any other database error: the operator's to fix.
        default: APIProblem(.internalError, "a database error; the server's log has it under this request's id")
        }
    }
}

/// `retract_http_requests_total{route,method,status}` and
/// `retract_http_request_duration_seconds{route,method}`.
final class HTTPMetrics: Sendable {
    private let factory: any MetricsFactory
    private let counters = NIOLockedValueBox([String: Counter]())
    private let timers = NIOLockedValueBox([String: Timer]())

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func record(route: String, method: String, status: Int, duration: Duration) {
        let counterKey = "\(method) \(route) \(status)"
        let counter = counters.withLockedValue { counters in
            if let existing = counters[counterKey] { return existing }
            let made = Counter(
                label: "retract_http_requests_total", dimensions: [("route", route), ("method", method), ("status", "\(status)")],
                factory: factory)
            counters[counterKey] = made
            return made
        }
        counter.increment()
        let timerKey = "\(method) \(route)"
        let timer = timers.withLockedValue { timers in
            if let existing = timers[timerKey] { return existing }
            let made = Timer(
                label: "retract_http_request_duration_seconds", dimensions: [("route", route), ("method", method)], factory: factory)
            timers[timerKey] = made
            return made
        }
        timer.recordNanoseconds(Int64(duration.inSeconds * 1e9))
    }
}
