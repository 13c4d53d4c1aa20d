import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOSSL
import RetractHTTP2

/// Sends messages through FCM HTTP v1 for one service account's project:
/// `POST /v1/projects/<project>/messages:send` over a few long-lived HTTP/2
/// connections (``HTTP2ConnectionPool``, as the APNs client: each message a
/// HEADERS and a DATA frame on a new stream, no child channel per request), with an OAuth2
/// access token it fetches and keeps (see ``FCMAssertion``).
///
/// The token endpoint, asked about once an hour, is reached through
/// AsyncHTTPClient.
public final class FCMClient: Sendable {
    public let account: FCMServiceAccount
    public let configuration: FCMClientConfiguration
    private let http: HTTPClient
    private let tokens: FCMAccessTokens
    private let pool: HTTP2ConnectionPool
    private let authority: String
    private let sendPath: String

    /// - Throws: ``FCMCredentialsError`` when a URL or trust root cannot be used.
    public init(
        account: FCMServiceAccount,
        configuration: FCMClientConfiguration = FCMClientConfiguration(),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        logger: Logger = Logger(label: "retract.fcm")
    ) throws(FCMCredentialsError) {
        let tokenURI = configuration.tokenURI ?? account.tokenURI
        guard let endpoint = Endpoint(baseURL: configuration.messagesBaseURL, projectID: account.projectID) else {
            throw FCMCredentialsError("the FCM base URL \"\(configuration.messagesBaseURL)\" is not an https:// URL")
        }
        guard let parsed = URL(string: tokenURI), parsed.scheme == "https", parsed.host != nil else {
            throw FCMCredentialsError("the token URI \"\(tokenURI)\" is not an https:// URL")
        }
        let roots: [NIOSSLCertificate]
        do {
            roots = try configuration.additionalTrustRootsPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
        } catch {
            throw FCMCredentialsError("an additional trust root is not a PEM certificate: \(error)")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if !roots.isEmpty { tls.additionalTrustRoots = [.certificates(roots)] }

        var messagesTLS = tls
        messagesTLS.applicationProtocols = ["h2"]
        messagesTLS.minimumTLSVersion = .tlsv12
        // Closing waits this long for the server's close_notify; some servers never send it.
        messagesTLS.shutdownTimeout = .seconds(1)
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: messagesTLS)
        } catch {
            throw FCMCredentialsError("cannot set up TLS: \(error)")
        }
        // Made last: nothing may throw once it exists, or it would never be shut down.
        var settings = HTTPClient.Configuration(tlsConfiguration: tls)
        settings.httpVersion = .automatic
        settings.timeout = .init(connect: .seconds(10))
        settings.connectionPool = .init(idleTimeout: .seconds(60))
        let http = HTTPClient(eventLoopGroupProvider: .shared(eventLoopGroup), configuration: settings, backgroundActivityLogger: logger)
        self.account = account
        self.configuration = configuration
        self.http = http
        tokens = FCMAccessTokens(account: account, tokenURI: tokenURI, http: http, configuration: configuration, logger: logger)
        pool = HTTP2ConnectionPool(
            service: "FCM", host: endpoint.host, port: endpoint.port, tls: context, group: eventLoopGroup,
            connectionCount: configuration.connectionCount, connectTimeout: configuration.connectTimeout, logger: logger)
        authority = endpoint.authority
        sendPath = endpoint.sendPath
    }

    /// Where `messages:send` is: the host to connect to, its port, and the
    /// `:authority` and `:path` of each request.
    package struct Endpoint: Equatable {
        package var host: String
        package var port: Int
        package var authority: String
        package var sendPath: String

        package init(host: String, port: Int, authority: String, sendPath: String) {
            self.host = host
            self.port = port
            self.authority = authority
            self.sendPath = sendPath
        }

        /// Nil unless `baseURL` is an `https://` URL with a host. An IPv6
        /// address is connected to bare and written in brackets in the
        /// authority; a path is kept as written (percent-encoded).
        package init?(baseURL: String, projectID: String) {
            guard let base = URLComponents(string: baseURL), base.scheme == "https", var host = base.host, !host.isEmpty else { return nil }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            self.host = host
            port = base.port ?? 443
            let named = host.contains(":") ? "[\(host)]" : host
            authority = port == 443 ? named : "\(named):\(port)"
            let basePath = base.percentEncodedPath.hasSuffix("/") ? String(base.percentEncodedPath.dropLast()) : base.percentEncodedPath
            sendPath = "\(basePath)/v1/projects/\(projectID)/messages:send"
        }
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
            let token: String
            if let fresh = tokens.fresh() {
                token = fresh
            } else {
                token = try await tokens.token()
            }
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

    /// How many connections to FCM were opened, for tests and metrics.
    public var connectionsOpened: Int { pool.openedConnectionCount }

    /// Makes room for `inFlight` messages at once: as many connections as the
    /// server's `SETTINGS_MAX_CONCURRENT_STREAMS` says they take, up to
    /// ``FCMClientConfiguration/maximumConnectionCount``.
    public func provision(inFlight: Int) {
        pool.provision(inFlight: inFlight, maximumConnections: configuration.maximumConnectionCount)
    }

    /// Closes the connections; sends still waiting fail with ``FCMError/clientShutdown``.
    public func shutdown() async {
        await pool.shutdown()
        try? await http.shutdown()
    }

    private func post(_ body: ByteBuffer, token: String) async throws(FCMError) -> String {
        var headers = HPACKHeaders()
        headers.reserveCapacity(6)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: sendPath)
        headers.add(name: ":authority", value: authority)
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        headers.add(name: "authorization", value: "Bearer \(token)")
        let deadline = NIODeadline.now() + configuration.requestTimeout
        let outcome = await withCheckedContinuation { continuation in
            pool.submit(HTTP2Exchange(headers: headers, body: body, deadline: deadline) { continuation.resume(returning: $0) })
        }
        switch outcome {
        case .answered(let status, let headers, let answer):
            let bytes = answer?.readableBytesView ?? ByteBuffer().readableBytesView
            guard status == 200 else {
                throw .rejected(FCMRejection(httpStatus: status, body: bytes, retryAfterHeader: headers.first(name: "retry-after")))
            }
            return Self.messageName(in: bytes)
        case .notProcessed:
            throw .connection("the connection to FCM closed before the message was processed")
        case .failed(let error):
            throw FCMError(connection: error)
        }
    }

    // Made once: messageName runs for every message sent.
    private static let nameKey = Array(#""name""#.utf8)
    private static let betweenKeyAndValue: [UInt8] = [
        UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"),
    ]

    /// The `name` of FCM's answer, `{"name": "projects/<project>/messages/<id>"}`,
    /// read without a JSON decoder (one per message costs more than the rest
    /// of the answer's handling); "" when it is not there as a plain string.
    package static func messageName(in bytes: ByteBufferView) -> String {
        let key = nameKey
        guard bytes.count >= key.count,
            let keyAt = (bytes.startIndex...(bytes.endIndex - key.count)).first(where: {
                bytes[$0..<($0 + key.count)].elementsEqual(key)
            })
        else { return "" }
        let keyStart = keyAt + key.count
        var index = keyStart
        while index < bytes.endIndex, betweenKeyAndValue.contains(bytes[index]) { index += 1 }
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { return "" }
        let start = index + 1
        guard let end = bytes[start...].firstIndex(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }),
            bytes[end] == UInt8(ascii: "\"")
        else { return "" }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
