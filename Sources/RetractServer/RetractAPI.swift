import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import RetractCore
import RetractKit
import RetractModel
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
    let limiter: KeyRateLimiter
    let feedMemory: FeedMemory
    /// The retractions answered 202 lately, looked up after a failover.
    let acknowledged: AcknowledgedRetractions
    let feedPacing: FeedPacing
    let feedMetrics: FeedMetrics
    let logger: Logger

    var store: RetractStore { engine.store }

    /// What a POST handler gets: the body, read and size-checked; the caller;
    /// the request's `Idempotency-Key`, if any, and what an earlier run of the
    /// same request kept of its work when it stopped part-way.
    struct PostInput: Sendable {
        var body: ByteBuffer
        var caller: Caller
        var idempotencyKey: String?
        var partialWork: [UInt8]? = nil
        /// The `{name}` of the path, for the routes under `/v1/apps/{name}`.
        var appName: String? = nil
        /// The `{id}` of the path, for the routes under `/v1/retractions/{id}`.
        var id: String? = nil
    }

    /// A POST that stopped on an error after doing part of its work: the
    /// answer to give, and what to keep with its `Idempotency-Key` so that a
    /// retry does only the rest.
    struct PartialFailure: Error {
        var problem: APIProblem
        var kept: [UInt8]
    }

    /// One answer of a POST, kept as bytes so an idempotent replay gives the same.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var body: ByteBuffer
        var headers: HTTPFields = [:]

        init(_ status: HTTPResponse.Status, _ value: some Encodable, headers: HTTPFields = [:]) {
            self.status = status
            body = APIJSON.buffer(value)
            self.headers = headers
        }

        /// An answer whose JSON was written without the encoder.
        init(_ status: HTTPResponse.Status, json: ByteBuffer, headers: HTTPFields = [:]) {
            self.status = status
            body = json
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
        post(router, "/v1/apps") { try await createApp($0) }
        write(router, .patch, "/v1/apps/:name") { try await updateApp($0) }
        post(router, "/v1/deliveries") { try await record($0) }
        post(router, "/v1/notifications") { try await send($0) }
        post(router, "/v1/retractions") { try await retract($0) }
        post(router, "/v1/edits") { try await editNotification($0) }
        post(router, "/v1/reads") { try await markRead($0) }
        post(router, "/v1/retractions/:id/cancel") { try await cancel($0) }
        post(router, "/v1/retractions/:id/approve") { try await decide(.approve, $0) }
        post(router, "/v1/retractions/:id/reject") { try await decide(.reject, $0) }
        post(router, "/v1/apps/:name/webhook") { try await setWebhook($0) }
        delete(router, "/v1/apps/:name/webhook") { request, context in
            let key = try APIKeySecret.bearer(in: request)
            return try await health.whileWritable {
                let caller = try await authenticate(key, context: context, kind: .write)
                return try await removeWebhook(appName: context.parameters.get("name") ?? "", caller: caller)
            }
        }
        read(router, "/v1/retractions/:id") { _, context, caller in try await status(context.parameters.get("id") ?? "", caller: caller) }
        // A key that may only read the feed is not limited by key (an app's one client key is every phone's),
        // but the feed as a whole is paced while this process sends. Every phone asks, mostly to hear that
        // nothing is new: its key and that answer come from memory when known, and only what memory does not
        // know waits for the database (`deviceFeed`).
        get(router, "/v1/devices/:token/retractions") { request, context in
            let key = try APIKeySecret.bearer(in: request)
            let caller = try await authenticate(key, context: context, kind: nil, fromMemory: true)
            if caller.key.scopes != [.client] { try limiter.admit(key: caller.key.id, kind: .read) }
            try await feedPacing.admit()
            return try await deviceFeed(context.parameters.get("token") ?? "", request: request, caller: caller)
        }
        read(router, "/v1/notifications") { request, _, caller in
            try await notifications(query: request.uri.queryParameters, caller: caller)
        }
        read(router, "/v1/audit") { request, _, caller in try await audit(query: request.uri.queryParameters, caller: caller) }
    }

    /// A GET of the API: the key is checked, then looked up while the
    /// database is up, and held to its rate of reads.
    private func read(
        _ router: Router<APIContext>, _ path: String, _ handler: @escaping @Sendable (Request, APIContext, Caller) async throws -> Answer
    ) {
        get(router, path) { request, context in
            let key = try APIKeySecret.bearer(in: request)
            return try await health.whileUp {
                let caller = try await authenticate(key, context: context, kind: .read)
                return try await handler(request, context, caller).response
            }
        }
    }

    private func get(
        _ router: Router<APIContext>, _ path: String, _ handler: @escaping @Sendable (Request, APIContext) async throws -> Response
    ) {
        routes.add(.get, path)
        router.get(RouterPath(path), use: handler)
    }

    private func delete(
        _ router: Router<APIContext>, _ path: String, _ handler: @escaping @Sendable (Request, APIContext) async throws -> Response
    ) {
        routes.add(.delete, path)
        router.delete(RouterPath(path), use: handler)
    }

    /// A POST: a missing or malformed key is refused before anything else;
    /// the key is looked up next, while the database is known to be up, so
    /// an unknown key is refused before its body is read; the body is read
    /// then (by the request's own task, the only one that may); the handler
    /// runs to its end, so a request that has started writing is never
    /// abandoned half-way.
    private func post(_ router: Router<APIContext>, _ path: String, _ handler: @escaping @Sendable (PostInput) async throws -> Answer) {
        write(router, .post, path, handler)
    }

    /// A POST's handling for another method that writes (PATCH).
    private func write(
        _ router: Router<APIContext>, _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (PostInput) async throws -> Answer
    ) {
        routes.add(method, path)
        router.on(RouterPath(path), method: method) { request, context in
            let key = try APIKeySecret.bearer(in: request)
            // A database that takes no writes (a standby the address reached after a failover) is told at once: nothing is attempted.
            let caller = try await health.whileWritable { try await authenticate(key, context: context, kind: .write) }
            var request = request
            let body = try await JSONBody.collect(&request, limit: settings.maxBodySize)
            let input = PostInput(
                body: body, caller: caller, idempotencyKey: try Self.idempotencyKey(in: request), appName: context.parameters.get("name"),
                id: context.parameters.get("id"))
            return try await idempotent(request, input: input, handler)
        }
    }

    // MARK: - Authentication

    /// The key's record, if it exists and is not revoked; 401 otherwise.
    /// Then 429 if the key is over its rate of this `kind` of request.
    /// With `fromMemory` (the feed, which is not run in ``DatabaseHealth/whileUp(_:)``
    /// as a whole), the record is the one ``FeedMemory`` keeps when it has
    /// it, and is read while the database is up when it does not.
    func authenticate(_ key: String, context: APIContext, kind: KeyRateLimiter.Kind?, fromMemory: Bool = false) async throws -> Caller {
        let hash = APIKeySecret.hash(key)
        let challenge: HTTPFields = [.wwwAuthenticate: #"Bearer realm="retract""#]
        let found: APIKeyRecord?
        if fromMemory {
            if let known = feedMemory.knownKey(hash: hash) {
                found = known
            } else {
                found = try await health.whileUp { try await feedMemory.apiKey(hash: hash) }
            }
        } else {
            found = try await store.apiKey(hash: hash)
        }
        guard let record = found, APIKeySecret.constantTimeEqual(record.keyHash, hash) else {
            throw APIProblem(.unauthorized, "unknown API key", headers: challenge)
        }
        guard record.revokedAt == nil else { throw APIProblem(.unauthorized, "the API key was revoked", headers: challenge) }
        let caller = Caller(key: record)
        context.notes.caller = caller.actor
        if let kind { try limiter.admit(key: record.id, kind: kind) }
        return caller
    }

    /// The app named `name`, if the caller's key may touch it; else 404, as
    /// for an app that does not exist, so names do not leak.
    func app(named name: String, for caller: Caller, field: String) async throws -> App {
        try await Self.app(named: name, for: caller, field: field, engine: engine)
    }

    /// The same, for the console too.
    static func app(named name: String, for caller: Caller, field: String, engine: RetractEngine) async throws -> App {
        // A name no app can have is not looked up (nor can odd bytes reach the database).
        guard AppRegistration.isValidName(name), let app = try await engine.app(findingNamed: name), caller.mayTouch(appID: app.id) else {
            throw APIProblem(.notFound, "\(field): no app named \"\(name.prefix(80))\" for this API key", field: field)
        }
        return app
    }

    // MARK: - Idempotency

    /// The request's `Idempotency-Key`: 1 to 255 printable ASCII characters.
    private static func idempotencyKey(in request: Request) throws(APIProblem) -> String? {
        guard let key = request.headers[.idempotencyKey] else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw APIProblem.invalid("Idempotency-Key", "1 to 255 printable ASCII characters")
        }
        return key
    }

    /// Runs a POST once per idempotency key: a retry with the same method,
    /// path and body gets the first answer; with another body, 409.
    private func idempotent(
        _ request: Request, input: PostInput, _ handler: @escaping @Sendable (PostInput) async throws -> Answer
    ) async throws -> Response {
        guard let key = input.idempotencyKey else { return try await handler(input).response }
        let apiKeyID = input.caller.key.id
        var hasher = SHA256()
        hasher.update(data: Data("\(request.method.rawValue) \(request.uri.path)\n".utf8))
        hasher.update(data: Data(input.body.readableBytesView))
        let requestHash = Array(hasher.finalize())
        let claimed = try await health.whileUp { try await store.claimIdempotencyKey(key, apiKeyID: apiKeyID, requestHash: requestHash) }
        var input = input
        let claim: UUID
        switch claimed {
        case .replay(let answer):
            var headers: HTTPFields = [.contentType: "application/json", .idempotentReplayed: "true"]
            if let location = answer.location { headers[.location] = location }
            return Response(
                status: HTTPResponse.Status(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
        case .conflict:
            throw APIProblem(.idempotencyConflict, "Idempotency-Key \"\(key)\" was used for a different request", field: "Idempotency-Key")
        case .inProgress:
            throw APIProblem(
                .idempotencyInProgress, "the first request with Idempotency-Key \"\(key)\" is still running", field: "Idempotency-Key")
        case .claimed(let mine, let partial):
            claim = mine
            input.partialWork = partial
        }
        let answer: Answer
        do {
            answer = try await whileExtending(key: key, apiKeyID: apiKeyID, claim: claim) { [input] in try await handler(input) }
        } catch let failure as PartialFailure {
            // Part of the work was done: the key keeps it, for a retry to do only the rest.
            await keepPartialWork(failure.kept, key: key, apiKeyID: apiKeyID, claim: claim)
            throw failure.problem
        } catch {
            // Nothing was kept: the key may be used again.
            try? await store.releaseIdempotencyKey(key, apiKeyID: apiKeyID, claim: claim)
            throw error
        }
        let kept = IdempotentAnswer(
            status: Int(answer.status.code), body: Array(answer.body.readableBytesView), location: answer.headers[.location])
        do {
            try await store.keepIdempotentAnswer(key: key, apiKeyID: apiKeyID, claim: claim, answer: kept)
        } catch {
            // The request was done; only its replay is lost. A retry a minute later runs it
            // again: harmless for recordings, and a retraction finds its first run by the key.
            logger.warning("an idempotent answer could not be kept", metadata: ["error": "\(error.message)"])
        }
        return answer.response
    }

    /// Keeps what a request did before it failed with its key. The failure
    /// is often the database going away, so it is tried again every second
    /// for as long as the claim is sure to be this request's (another server
    /// takes a claim over after a minute without news; the last was at most
    /// 20 s ago). Lost, a retry with the key does the work again.
    private func keepPartialWork(_ partial: [UInt8], key: String, apiKeyID: UUID, claim: UUID) async {
        do {
            try await store.waitingOutLostConnections(for: Self.partialWorkPatience) { () async throws(StoreError) in
                try await store.keepPartialWork(key: key, apiKeyID: apiKeyID, claim: claim, partial: partial)
            }
        } catch {
            logger.error(
                "the work a request did before it failed could not be kept; a retry with its Idempotency-Key does it again",
                metadata: ["error": "\(error.message)"])
        }
    }

    /// How long a request waits for the database to keep its partial work.
    static let partialWorkPatience: Duration = .seconds(30)

    /// Runs `body` while a side task tells other servers, every 20 s, that
    /// the claim's request is still running (a claim is taken over after a
    /// minute without news).
    private func whileExtending(
        key: String, apiKeyID: UUID, claim: UUID, _ body: @escaping @Sendable () async throws -> Answer
    ) async throws -> Answer {
        try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(20))
                    _ = try? await store.extendIdempotencyClaim(key: key, apiKeyID: apiKeyID, claim: claim)
                }
                return nil
            }
            defer { group.cancelAll() }
            while let finished = try await group.next() {
                if let answer = finished { return answer }
            }
            throw CancellationError()
        }
    }

    // MARK: - Operations

    private func ready() async throws -> Response {
        await health.check(store)
        guard health.isUp else { throw APIProblem.databaseUnavailable("the database is unavailable") }
        // Up but taking no writes: a load balancer sends no traffic here until the address reaches a primary.
        if let reason = health.readOnly { throw APIProblem(.notReady, reason) }
        let pending: [Migration]
        do {
            pending = try await MigrationRunner().pending(store)
        } catch {
            // A newer server migrated the ledger (a rolling deploy): this one takes no traffic.
            guard error.code == .schemaMismatch else { throw error }
            throw APIProblem(.notReady, error.message)
        }
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
