import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import RetractCore
import RetractKit
import RetractStore

/// The HTTP API's endpoints over the engine. Every `/v1` request is
/// authenticated by its API key, checked field by field before anything is
/// written, and may carry an `Idempotency-Key`.
struct RetractAPI: Sendable {
    let engine: RetractEngine
    let settings: ServerSettings
    let health: DatabaseHealth
    let routes: RouteTable
    let registry: PrometheusCollectorRegistry
    let logger: Logger

    var store: RetractStore { engine.store }

    /// One answer of a POST, kept as bytes so an idempotent replay gives the same.
    struct Answer {
        var status: HTTPResponse.Status
        var body: ByteBuffer
        var headers: HTTPFields = [:]

        init(_ status: HTTPResponse.Status, _ value: some Encodable, headers: HTTPFields = [:]) {
            self.status = status
            body = APIJSON.buffer(value)
            self.headers = headers
        }

        var response: Response {
            var headers = headers
            headers[.contentType] = "application/json"
            return Response(status: status, headers: headers, body: .init(byteBuffer: body))
        }
    }

    func register(on router: Router<APIContext>) {
        get(router, "/healthz") { _, _ in Answer(.ok, StatusView(status: "ok")).response }
        get(router, "/readyz") { _, _ in try await ready() }
        get(router, "/metrics") { _, _ in metrics() }
        get(router, "/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml"],
                body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
        guard settings.mode.servesAPI else { return }
        post(router, "/v1/apps") { body, caller in try await createApp(body, caller: caller) }
        post(router, "/v1/deliveries") { body, caller in try await record(body, caller: caller) }
        post(router, "/v1/notifications") { body, caller in try await send(body, caller: caller) }
        post(router, "/v1/retractions") { body, caller in try await retract(body, caller: caller) }
        get(router, "/v1/retractions/:id") { request, context in
            try await health.whileUp {
                let caller = try await authenticate(request, context: context)
                return try await status(context.parameters.get("id") ?? "", caller: caller).response
            }
        }
        get(router, "/v1/devices/:token/retractions") { request, context in
            try await health.whileUp {
                let caller = try await authenticate(request, context: context)
                return try await deviceFeed(context.parameters.get("token") ?? "", query: request.uri.queryParameters, caller: caller)
                    .response
            }
        }
    }

    private func get(
        _ router: Router<APIContext>, _ path: String, _ handler: @escaping @Sendable (Request, APIContext) async throws -> Response
    ) {
        routes.add(.get, path)
        router.get(RouterPath(path), use: handler)
    }

    private func post(
        _ router: Router<APIContext>, _ path: String, _ handler: @escaping @Sendable (ByteBuffer, Caller) async throws -> Answer
    ) {
        routes.add(.post, path)
        router.post(RouterPath(path)) { request, context in
            try await health.whileUp {
                var request = request
                let caller = try await authenticate(request, context: context)
                let body = try await JSONBody.collect(&request, limit: settings.maxBodySize)
                return try await idempotent(request, body: body, caller: caller) { try await handler(body, caller) }
            }
        }
    }

    // MARK: - Authentication

    func authenticate(_ request: Request, context: APIContext) async throws -> Caller {
        let key = try APIKeySecret.bearer(in: request)
        let hash = APIKeySecret.hash(key)
        let challenge: HTTPFields = [.wwwAuthenticate: #"Bearer realm="retract""#]
        guard let record = try await store.apiKey(hash: hash), APIKeySecret.constantTimeEqual(record.keyHash, hash) else {
            throw APIProblem(.unauthorized, "unknown API key", headers: challenge)
        }
        guard record.revokedAt == nil else { throw APIProblem(.unauthorized, "the API key was revoked", headers: challenge) }
        let caller = Caller(key: record)
        context.notes.caller = caller.actor
        return caller
    }

    /// The app named `name`, if the caller's key may touch it; else 404, as
    /// for an app that does not exist, so names do not leak.
    func app(named name: String, for caller: Caller, field: String) async throws -> App {
        guard let app = try await store.app(named: name), caller.mayTouch(appID: app.id) else {
            throw APIProblem(.notFound, "\(field): no app named \"\(name.prefix(80))\" for this API key", field: field)
        }
        return app
    }

    // MARK: - Idempotency

    private func idempotent(_ request: Request, body: ByteBuffer, caller: Caller, _ run: () async throws -> Answer) async throws -> Response
    {
        guard let key = request.headers[.idempotencyKey] else { return try await run().response }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw APIProblem.invalid("Idempotency-Key", "1 to 255 printable ASCII characters")
        }
        var hasher = SHA256()
        hasher.update(data: Data("\(request.method.rawValue) \(request.uri.path)\n".utf8))
        hasher.update(data: Data(body.readableBytesView))
        let hash = Array(hasher.finalize())
        switch try await store.claimIdempotencyKey(key, apiKeyID: caller.key.id, requestHash: hash) {
        case .replay(let status, let stored):
            return Response(
                status: HTTPResponse.Status(code: status),
                headers: [.contentType: "application/json", .idempotentReplayed: "true"],
                body: .init(byteBuffer: ByteBuffer(bytes: stored)))
        case .conflict:
            throw APIProblem(.idempotencyConflict, "Idempotency-Key \"\(key)\" was used for a different request", field: "Idempotency-Key")
        case .inProgress:
            throw APIProblem(
                .idempotencyInProgress, "the first request with Idempotency-Key \"\(key)\" is still running", field: "Idempotency-Key")
        case .claimed:
            let answer: Answer
            do {
                answer = try await run()
            } catch {
                // Nothing was kept: the key may be used again.
                try? await store.releaseIdempotencyKey(key, apiKeyID: caller.key.id)
                throw error
            }
            do {
                try await store.keepIdempotentAnswer(
                    key: key, apiKeyID: caller.key.id, status: Int(answer.status.code), body: Array(answer.body.readableBytesView))
            } catch {
                // The request was done; only its replay is lost (a retry within a minute reads as in progress).
                logger.warning("an idempotent answer could not be kept", metadata: ["error": "\(error.message)"])
            }
            return answer.response
        }
    }

    // MARK: - Operations

    private func ready() async throws -> Response {
        await health.check(store)
        guard health.isUp else { throw APIProblem.databaseUnavailable("the database is unavailable") }
        let pending = try await MigrationRunner().pending(store)
        guard pending.isEmpty else {
            throw APIProblem(.notReady, "migrations not applied: \(pending.map(\.name).joined(separator: ", ")); run retract migrate")
        }
        return Answer(.ok, StatusView(status: "ready")).response
    }

    private func metrics() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }
}
