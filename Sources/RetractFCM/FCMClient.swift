import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// Sends messages through FCM HTTP v1 for one service account's project:
/// `POST /v1/projects/<project>/messages:send` over HTTP/2 (AsyncHTTPClient
/// negotiates it with ALPN), with an OAuth2 access token it fetches and
/// keeps (see ``FCMAssertion``).
public final class FCMClient: Sendable {
    public let account: FCMServiceAccount
    private let http: HTTPClient
    private let tokens: FCMAccessTokens
    private let sendURL: String
    private let timeout: TimeAmount

    /// - Throws: ``FCMCredentialsError`` when a URL or trust root cannot be used.
    public init(
        account: FCMServiceAccount,
        configuration: FCMClientConfiguration = FCMClientConfiguration(),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        logger: Logger = Logger(label: "retract.fcm")
    ) throws(FCMCredentialsError) {
        let base =
            configuration.messagesBaseURL.hasSuffix("/") ? String(configuration.messagesBaseURL.dropLast()) : configuration.messagesBaseURL
        let tokenURI = configuration.tokenURI ?? account.tokenURI
        for (name, url) in [("FCM base URL", base), ("token URI", tokenURI)] {
            guard let parsed = URL(string: url), parsed.scheme == "https", parsed.host != nil else {
                throw FCMCredentialsError("the \(name) \"\(url)\" is not an https:// URL")
            }
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            let roots = try configuration.additionalTrustRootsPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
            if !roots.isEmpty { tls.additionalTrustRoots = [.certificates(roots)] }
        } catch {
            throw FCMCredentialsError("an additional trust root is not a PEM certificate: \(error)")
        }
        var settings = HTTPClient.Configuration(tlsConfiguration: tls)
        settings.httpVersion = .automatic
        settings.timeout = .init(connect: .seconds(10))
        settings.connectionPool = .init(idleTimeout: .seconds(60))
        let http = HTTPClient(eventLoopGroupProvider: .shared(eventLoopGroup), configuration: settings, backgroundActivityLogger: logger)
        self.account = account
        self.http = http
        tokens = FCMAccessTokens(account: account, tokenURI: tokenURI, http: http, configuration: configuration, logger: logger)
        sendURL = "\(base)/v1/projects/\(account.projectID)/messages:send"
        timeout = configuration.requestTimeout
    }

    /// Sends one message (a ``FCMMessage/request(token:)`` body).
    ///
    /// An access token the endpoint refuses (401 `UNAUTHENTICATED`) is
    /// replaced and the message sent once more before the error is reported.
    ///
    /// - Returns: the message's name, `projects/<project>/messages/<id>`.
    @discardableResult
    public func send(_ body: ByteBuffer) async throws(FCMError) -> String {
        var refreshed = false
        while true {
            let token = try await tokens.token()
            do {
                return try await post(body, token: token)
            } catch {
                guard case .rejected(let rejection) = error, rejection.disposition == .refreshAccessToken, !refreshed else { throw error }
                await tokens.invalidate(token)
                refreshed = true
            }
        }
    }

    /// The current access token, fetching one if needed: what ``send(_:)`` uses.
    public func accessToken() async throws(FCMError) -> String {
        try await tokens.token()
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    private func post(_ body: ByteBuffer, token: String) async throws(FCMError) -> String {
        var request = HTTPClientRequest(url: sendURL)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        request.headers.add(name: "authorization", value: "Bearer \(token)")
        request.body = .bytes(body)
        let response: HTTPClientResponse
        let answer: ByteBuffer
        do {
            response = try await http.execute(request, timeout: timeout)
            answer = try await response.body.collect(upTo: 256 * 1024)
        } catch {
            throw FCMError(sending: error)
        }
        guard response.status == .ok else {
            throw .rejected(
                FCMRejection(
                    httpStatus: Int(response.status.code), body: answer.readableBytesView,
                    retryAfterHeader: response.headers.first(name: "retry-after")))
        }
        struct Sent: Decodable { var name: String }
        return (try? JSONDecoder().decode(Sent.self, from: answer))?.name ?? ""
    }
}
