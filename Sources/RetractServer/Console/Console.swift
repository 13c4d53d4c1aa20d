import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// The moderation console at `/console`: server-rendered pages over the same
/// engine and ledger as the API, for a browser signed in with an API key.
/// What the key's scopes and apps allow is all a page shows or does; a form
/// posted without the session's token, or by a key without the scope it
/// needs, is refused whatever the page showed.
struct Console: Sendable {
    let engine: RetractEngine
    let settings: ServerSettings
    let health: DatabaseHealth
    let pages: ConsolePages
    let streams: ProgressStreams
    let limiter: KeyRateLimiter
    let logger: Logger

    var store: RetractStore { engine.store }
    var sessions: ConsoleSessions { ConsoleSessions(store: store, plainHTTP: settings.consolePlainHTTP) }

    /// The largest form the console takes: a reason of 1,000 characters and a few fields.
    static let maximumFormSize = 16 * 1024
    /// Devices listed on a notification's page.
    static let devicesShown = 50
    /// Rows per page of the notification list and the audit log.
    static let pageSize = 50

    init(
        engine: RetractEngine, settings: ServerSettings, health: DatabaseHealth, streams: ProgressStreams, limiter: KeyRateLimiter,
        logger: Logger
    ) throws {
        self.engine = engine
        self.settings = settings
        self.health = health
        self.pages = try ConsolePages()
        self.streams = streams
        self.limiter = limiter
        self.logger = logger
    }

    func register(on router: Router<APIContext>) {
        router.get("/console") { request, _ in
            try await page(request) { _ in Self.redirect(to: "/console/notifications") }
        }
        router.get("/console/assets/:name") { _, context in
            guard let asset = ConsolePages.asset(named: context.parameters.get("name") ?? "") else {
                return pages.problem(.notFound, "No such file.", session: nil)
            }
            return asset
        }
        router.get("/console/sign-in") { request, _ in signInPage(request, error: nil) }
        router.post("/console/sign-in") { request, _ in try await signIn(request) }
        router.post("/console/sign-out") { request, _ in
            try await form(request) { signedIn, _ in
                var response = Self.redirect(to: "/console/sign-in")
                response.headers[.setCookie] = try await sessions.end(signedIn)
                streams.end(session: signedIn.sessionHash)
                return response
            }
        }
        router.get("/console/notifications") { request, _ in
            try await page(request) { signedIn in try await notifications(request, signedIn) }
        }
        router.get("/console/notification") { request, _ in
            try await page(request) { signedIn in try await notification(request, signedIn) }
        }
        router.get("/console/retract-many") { request, _ in
            try await page(request) { signedIn in try await retractMany(request, signedIn) }
        }
        router.post("/console/dry-run") { request, _ in
            try await form(request) { signedIn, fields in try await dryRun(fields, signedIn) }
        }
        router.post("/console/retract") { request, _ in
            try await form(request) { signedIn, fields in try await retract(fields, signedIn) }
        }
        router.get("/console/retractions/:id") { request, context in
            try await page(request) { signedIn in try await retraction(context.parameters.get("id") ?? "", signedIn) }
        }
        router.post("/console/retractions/:id/cancel") { request, context in
            try await form(request) { signedIn, fields in try await cancel(context.parameters.get("id") ?? "", fields, signedIn) }
        }
        router.post("/console/retractions/:id/approve") { request, context in
            try await form(request) { signedIn, fields in
                try await decide(.approve, context.parameters.get("id") ?? "", fields, signedIn)
            }
        }
        router.post("/console/retractions/:id/reject") { request, context in
            try await form(request) { signedIn, fields in
                try await decide(.reject, context.parameters.get("id") ?? "", fields, signedIn)
            }
        }
        router.get("/console/retractions/:id/progress") { request, context in
            try await page(request) { signedIn in
                let (status, _) = try await visibleRetraction(context.parameters.get("id") ?? "", signedIn)
                return Self.json(ConsoleProgress(status))
            }
        }
        router.get("/console/retractions/:id/events") { request, context in
            try await page(request) { signedIn in try await events(context.parameters.get("id") ?? "", signedIn, request: request) }
        }
        router.get("/console/audit") { request, _ in
            try await page(request) { signedIn in try await audit(request, signedIn) }
        }
    }

    // MARK: - Sign-in

    private func signInPage(_ request: Request, error: String?, status: HTTPResponse.Status = .ok) -> Response {
        // The sign-in form's token: a fresh cookie and the same value in the form (double submit).
        let token = ConsoleSessions.randomSecret()
        let next = Self.safeNext(request.uri.queryParameters.get("next"))
        var response = pages.render(
            "signin", SignInPage(formToken: token, next: next, error: error, sessionHours: Int(ConsoleSessions.lifetime.inSeconds / 3600)),
            status: status)
        response.headers[.setCookie] = sessions.setCookie(sessions.signInCookieName, token, maxAge: .seconds(3600))
        return response
    }

    private func signIn(_ request: Request) async throws -> Response {
        var request = request
        let fields = try await Self.formFields(&request)
        let expected = ConsoleSessions.cookie(sessions.signInCookieName, in: request) ?? ""
        guard !expected.isEmpty, ConsoleSessions.tokensMatch(fields["csrf"], expected) else {
            return signInPage(request, error: "The form expired; sign in again.", status: .forbidden)
        }
        let key = (fields["key"] ?? "").trimmingCharacters(in: .whitespaces)
        guard APIKeySecret.isWellFormed(key) else {
            return signInPage(request, error: "That is not a Retract API key: rk_ and 43 characters.", status: .unauthorized)
        }
        // Signing in writes a session.
        let record = try await health.whileWritable { try await store.apiKey(hash: APIKeySecret.hash(key)) }
        guard let record, APIKeySecret.constantTimeEqual(record.keyHash, APIKeySecret.hash(key)), record.revokedAt == nil else {
            return signInPage(request, error: "Unknown or revoked API key.", status: .unauthorized)
        }
        let caller = Caller(key: record)
        guard (try? caller.require(.read)) != nil else {
            return signInPage(request, error: "This key lacks the read scope, which the console needs.", status: .forbidden)
        }
        var response = Self.redirect(to: Self.safeNext(fields["next"]))
        response.headers[values: .setCookie] = [
            try await sessions.start(for: record),
            sessions.setCookie(sessions.signInCookieName, "", maxAge: .zero),
        ]
        logger.info("console sign-in", metadata: ["key": "\(caller.actor)"])
        return response
    }

    /// Where to go after sign-in: a console path, never another site.
    static func safeNext(_ given: String?) -> String {
        guard let given, given.hasPrefix("/console/"), !given.hasPrefix("//"), !given.contains("\\"), given.utf8.count <= 2000,
            !given.unicodeScalars.contains(where: { $0.value < 0x20 })
        else { return "/console/notifications" }
        return given
    }

    // MARK: - Page and form plumbing

    /// A GET page for a signed-in browser; others are sent to sign in. Errors
    /// become a page saying what went wrong.
    private func page(_ request: Request, _ handler: (ConsoleSessions.SignedIn) async throws -> Response) async throws -> Response {
        do {
            let signedIn = try await health.whileUp { try await sessions.signedIn(request) }
            guard let signedIn else {
                let next = request.uri.path + (request.uri.query.map { "?\($0)" } ?? "")
                return Self.redirect(to: "/console/sign-in?next=\(Self.percentEncoded(next))")
            }
            try limiter.admit(key: signedIn.caller.key.id, kind: .read)
            return try await handler(signedIn)
        } catch {
            return problemPage(for: error, session: nil)
        }
    }

    /// A POSTed form: signed in, with the session's token; the handler gets its fields.
    private func form(
        _ request: Request, _ handler: (ConsoleSessions.SignedIn, [String: String]) async throws -> Response
    ) async throws -> Response {
        do {
            var readable = request
            let fields = try await Self.formFields(&readable)
            let signedIn = try await health.whileWritable { try await sessions.signedIn(request) }
            guard let signedIn else {
                return pages.problem(.unauthorized, "You are not signed in, or your session ended. Sign in again.", session: nil)
            }
            guard ConsoleSessions.tokensMatch(fields["csrf"], signedIn.formToken) else {
                return pages.problem(.forbidden, "The form's token is missing or stale; reload the page and try again.", session: signedIn)
            }
            try limiter.admit(key: signedIn.caller.key.id, kind: .write)
            return try await handler(signedIn, fields)
        } catch {
            return problemPage(for: error, session: nil)
        }
    }

    private func problemPage(for error: any Error, session: ConsoleSessions.SignedIn?) -> Response {
        let problem = APIRequestMiddleware.problem(forKnown: error)
        if problem.kind == .internalError { logger.error("console request failed", metadata: ["error": "\(String(reflecting: error))"]) }
        var response = pages.problem(problem.status, problem.detail, session: session)
        // Retry-After, say, still applies.
        for field in problem.headers { response.headers.append(field) }
        return response
    }

    /// The fields of an `application/x-www-form-urlencoded` body.
    static func formFields(_ request: inout Request) async throws -> [String: String] {
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        guard contentType.hasPrefix("application/x-www-form-urlencoded") else {
            throw APIProblem(.unsupportedMediaType, "a console form is sent as application/x-www-form-urlencoded")
        }
        let body = try await request.collectBody(upTo: maximumFormSize)
        return parseForm(String(buffer: body))
    }

    static func parseForm(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = parts.first.flatMap(decode) else { continue }
            fields[name] = parts.count == 2 ? decode(parts[1]) ?? "" : ""
        }
        return fields
    }

    /// A reference or label as the ledger keeps it, as a person reads it:
    /// `233`, or `233 (account acme)` for an account's (``LedgerScope``).
    static func shownKey(_ key: String) -> String { LedgerScope.shown(key) }

    static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    static func json(_ value: some Encodable) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: APIJSON.buffer(value)))
    }

    /// The app named `name` if the signed-in key may touch it; 404 otherwise, as in the API.
    func app(named name: String, _ signedIn: ConsoleSessions.SignedIn) async throws -> App {
        try await RetractAPI.app(named: name, for: signedIn.caller, field: "app", engine: engine)
    }

    /// The apps the key may touch, by name.
    func visibleApps(_ signedIn: ConsoleSessions.SignedIn) async throws -> [App] {
        try await engine.store.apps().filter { signedIn.caller.mayTouch(appID: $0.id) }.sorted { $0.name < $1.name }
    }

    // MARK: - Retracting

    /// The retraction a form describes: its app, what it takes (one
    /// `reference`, or every notification with a label: `by` thread,
    /// sender, recipient or campaign, its `value`, and an optional
    /// `sentAfter`/`sentBefore` in UTC), a reason (required) and a delivery
    /// mode (the app's own when empty).
    private func retractionForm(_ fields: [String: String], _ signedIn: ConsoleSessions.SignedIn) async throws -> RetractionForm {
        try signedIn.caller.require(.retract)
        let app = try await app(named: fields["app"] ?? "", signedIn)
        let target = try ConsoleTarget(fields)
        let checked = try Validate.reason(fields["reason"] ?? "")
        let modeText = fields["mode"].flatMap { $0.isEmpty ? nil : $0 }
        let mode = try Validate.mode(modeText, field: "mode") ?? app.retractionMode
        return RetractionForm(app: app, target: target, reason: checked, mode: mode)
    }

    /// The dry run: how many devices a retraction would reach, shown before the confirm step.
    private func dryRun(_ fields: [String: String], _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        let form = try await retractionForm(fields, signedIn)
        let (retraction, _) = try await engine.startRetraction(
            app: form.app, target: form.target.target, requestedBy: signedIn.caller.actor, reason: form.reason, dryRun: true,
            mode: form.mode, account: form.target.account)
        let warnings = RetractionWarnings.before(retraction, dialect: form.app.dialect)
        return pages.render("confirm", ConfirmPage(form, dryRun: retraction, warnings: warnings, session: .init(signedIn)))
    }

    private func retract(_ fields: [String: String], _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        let form = try await retractionForm(fields, signedIn)
        if settings.mode.runsWorkers { try engine.checkCredentials(of: form.app) }
        let (retraction, _) = try await engine.startRetraction(
            app: form.app, target: form.target.target, requestedBy: signedIn.caller.actor, reason: form.reason, mode: form.mode,
            requestedKeyID: signedIn.caller.key.id, account: form.target.account)
        logger.notice(
            "console retraction",
            metadata: ["retraction": "\(retraction.id)", "app": "\(form.app.name)", "key": "\(signedIn.caller.actor)"])
        return Self.redirect(to: "/console/retractions/\(retraction.id.uuidString.lowercased())")
    }

    /// Cancels the retraction, with the form's reason (required), and shows it again.
    private func cancel(_ id: String, _ fields: [String: String], _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        let (status, app) = try await RetractAPI.retraction(id, for: signedIn.caller, engine: engine, requiring: .retract)
        let checked = try Validate.reason(fields["reason"] ?? "")
        _ = try await engine.cancel(status.retraction.id, by: signedIn.caller.actor, reason: checked, apps: signedIn.caller.appsTouched)
        RetractAPI.forgetInFeed(status.retraction.id, engine: engine, logger: logger)
        logger.notice(
            "console cancel", metadata: ["retraction": "\(status.retraction.id)", "app": "\(app.name)", "key": "\(signedIn.caller.actor)"])
        return Self.redirect(to: "/console/retractions/\(status.retraction.id.uuidString.lowercased())")
    }

    /// Approves or rejects the retraction, with the form's reason (required), and shows it again.
    private func decide(
        _ decision: RetractStore.ApprovalDecision, _ id: String, _ fields: [String: String], _ signedIn: ConsoleSessions.SignedIn
    ) async throws -> Response {
        let (status, app) = try await RetractAPI.retraction(id, for: signedIn.caller, engine: engine, requiring: .approve)
        let checked = try Validate.reason(fields["reason"] ?? "")
        _ = try await engine.decideApproval(
            of: status.retraction.id, decision, by: signedIn.caller.actor, keyID: signedIn.caller.key.id, reason: checked,
            apps: signedIn.caller.appsTouched)
        logger.notice(
            "console \(decision.rawValue)",
            metadata: ["retraction": "\(status.retraction.id)", "app": "\(app.name)", "key": "\(signedIn.caller.actor)"])
        return Self.redirect(to: "/console/retractions/\(status.retraction.id.uuidString.lowercased())")
    }

    // MARK: - A retraction

    /// The retraction with `id`, when the key may read it; 404 otherwise.
    func visibleRetraction(_ id: String, _ signedIn: ConsoleSessions.SignedIn) async throws -> (RetractionStatus, App) {
        try await RetractAPI.retraction(id, for: signedIn.caller, engine: engine)
    }

    private func retraction(_ id: String, _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        let (status, app) = try await visibleRetraction(id, signedIn)
        return pages.render("retraction", RetractionPage(status, app: app, session: .init(signedIn)))
    }

    /// Server-sent events: the progress now, then whenever it changes, until
    /// the retraction ends, the browser goes, the session ends, or a minute
    /// passes (the browser reconnects by itself). ``ProgressStreams`` reads
    /// the status, once for every stream of the retraction.
    private func events(_ id: String, _ signedIn: ConsoleSessions.SignedIn, request: Request) async throws -> Response {
        let (first, _) = try await visibleRetraction(id, signedIn)
        let progress = ConsoleProgress(first)
        // A retraction that has ended needs one event, not a stream.
        var updates: AsyncStream<ConsoleProgress>? = nil
        if !progress.finished {
            do {
                updates = try streams.open(retraction: first.retraction.id, session: signedIn.sessionHash, key: signedIn.caller.key.id)
            } catch .stopped {
                throw APIProblem(.notReady, ProgressStreams.Refusal.stopped.message, headers: [.retryAfter: "5"])
            } catch {
                throw APIProblem(.tooManyRequests, error.message, headers: [.retryAfter: "10"])
            }
        }
        let body = ResponseBody { [updates] writer in
            // Cancelled when the browser closes the connection: nothing waits for a reader that left.
            try await request.body.consumeWithCancellationOnInboundClose { _ in
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                var last: ConsoleProgress?
                func send(_ progress: ConsoleProgress) async throws {
                    guard progress != last else { return }
                    var event = ByteBuffer(string: "data: ")
                    event.writeImmutableBuffer(APIJSON.buffer(progress))
                    event.writeString("\n\n")
                    try await writer.write(event)
                    last = progress
                }
                try await send(progress)
                guard let updates else { return }
                for await progress in updates { try await send(progress) }
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"],
            body: body)
    }
}

/// A retraction form, checked.
struct RetractionForm: Sendable {
    var app: App
    var target: ConsoleTarget
    var reason: String
    var mode: RetractionMode
}

extension APIRequestMiddleware {
    /// What an error means to a person, for errors whose meaning does not depend on the route.
    static func problem(forKnown error: any Error) -> APIProblem {
        switch error {
        case let problem as APIProblem: problem
        case let error as RetractError: problem(for: error)
        case let error as StoreError: problem(for: error)
        case is NIOTooManyBytesError: APIProblem(.payloadTooLarge, "the form is too large")
        default: APIProblem(.internalError, "an internal error; the server's log has it")
        }
    }
}
