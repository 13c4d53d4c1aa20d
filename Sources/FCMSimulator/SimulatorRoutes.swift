import Foundation
import Hummingbird
import NIOCore
import RetractFCM

/// The simulator's two endpoints: `POST /token` and
/// `POST /v1/projects/{project}/messages:send`.
struct SimulatorRoutes: Sendable {
    let configuration: FCMSimulatorConfiguration
    let state: SimulatorState

    func register(on router: Router<SimulatorRequestContext>) {
        router.post("token") { request, _ in try await issueToken(request) }
        router.post("v1/projects/:project/messages:send") { request, context in
            if !context.isHTTP2 { state.countHTTP1Message() }
            return try await send(request, project: context.parameters.get("project") ?? "")
        }
    }

    // MARK: - The token endpoint

    /// RFC 7523's jwt-bearer grant: a form with `grant_type` and `assertion`.
    private func issueToken(_ request: Request) async throws -> Response {
        let form = try await request.body.collect(upTo: 64 * 1024)
        var fields: [String: String] = [:]
        for pair in String(buffer: form).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            fields[String(parts[0])] = String(parts[1]).removingPercentEncoding
        }
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(fields["grant_type"] ?? "")")
        }
        guard let assertion = fields["assertion"] else { return refuse("invalid_request", "Missing required parameter: assertion") }
        let accounts = Dictionary(configuration.accounts.map { ($0.clientEmail, $0) }, uniquingKeysWith: { first, _ in first })
        let claims: FCMAssertion.Claims
        do {
            claims = try FCMAssertion.verify(Substring(assertion)) { accounts[$0]?.publicKey }
        } catch {
            switch error {
            case .unknownIssuer(let issuer): return refuse("invalid_grant", "Invalid JWT: no service account \(issuer)")
            case .badSignature: return refuse("invalid_grant", "Invalid JWT Signature.")
            case .malformed, .unsupportedAlgorithm: return refuse("invalid_grant", "Invalid JWT: \(error)")
            }
        }
        let now = configuration.now()
        let tokenURI = "https://\(request.head.authority ?? "")/token"
        guard [tokenURI, FCMServiceAccount.defaultTokenURI].contains(claims.audience) else {
            return refuse("invalid_grant", "Invalid JWT: audience \(claims.audience) is not \(tokenURI)")
        }
        guard claims.scope.split(separator: " ").contains(Substring(FCMAssertion.scope)) else {
            return refuse("invalid_scope", "The assertion's scope does not include \(FCMAssertion.scope)")
        }
        guard claims.expiresAt > now, claims.issuedAt <= now.addingTimeInterval(300),
            claims.expiresAt.timeIntervalSince(claims.issuedAt) <= FCMAssertion.lifetime
        else {
            return refuse("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let account = accounts[claims.issuer]!
        let lifetime = configuration.accessTokenLifetime
        let token = state.issue(
            .init(clientEmail: account.clientEmail, projectID: account.projectID, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)))
        )
        return json(200, ["access_token": token, "expires_in": lifetime, "token_type": "Bearer"])
    }

    private func refuse(_ error: String, _ description: String) -> Response {
        state.countRefusedTokenRequest()
        return json(400, ["error": error, "error_description": description])
    }

    // MARK: - messages:send

    private func send(_ request: Request, project: String) async throws -> Response {
        let body = try await request.body.collect(upTo: 1024 * 1024)
        do {
            let token = try authorize(request, project: project)
            _ = token
            let message = try ValidatedMessage(body: Data(buffer: body))
            if let fault = state.nextFault(for: message.token) { throw SimulatedRejection(fault) }
            let id = state.accept(message, project: project, at: configuration.now())
            // Written by hand: this answer is the simulator's hot path; the project is the account's own id.
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=UTF-8"
            return Response(
                status: .ok, headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: #"{"name":"projects/\#(project)/messages/0:\#(id)"}"#)))
        } catch let rejection as SimulatedRejection {
            state.countRejected(rejection.code)
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=UTF-8"
            if let retryAfter = rejection.retryAfter { headers[.retryAfter] = "\(retryAfter)" }
            return Response(
                status: .init(code: rejection.httpStatus), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: rejection.body)))
        }
    }

    /// The bearer token must be one this simulator issued, unexpired, for this project.
    private func authorize(_ request: Request, project: String) throws(SimulatedRejection) -> SimulatorState.AccessToken {
        let header = request.headers[.authorization] ?? ""
        guard header.hasPrefix("Bearer "), let token = state.accessToken(String(header.dropFirst("Bearer ".count))) else {
            throw .unauthenticated("Request had invalid authentication credentials. Expected OAuth 2 access token.")
        }
        guard token.expiresAt > configuration.now() else {
            throw .unauthenticated("Request had invalid authentication credentials. The access token expired.")
        }
        guard token.projectID == project else {
            throw SimulatedRejection(
                httpStatus: 403, status: "PERMISSION_DENIED",
                message:
                    "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)'"
            )
        }
        return token
    }

    private func json(_ status: Int, _ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=UTF-8"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// A request's context, knowing whether the request came over HTTP/2: FCM
/// is reached over HTTP/2, and the simulator counts what came otherwise.
struct SimulatorRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// An HTTP/2 request has a stream channel of its own, whose parent is the
    /// connection; an HTTP/1 request's channel is the connection itself.
    let isHTTP2: Bool

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        isHTTP2 = source.channel.parent?.parent != nil
    }
}
