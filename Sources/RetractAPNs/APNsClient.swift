import Foundation
import Logging
import Metrics
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import RetractHTTP2

/// Sends pushes to APNs over a few long-lived HTTP/2 connections.
///
/// Concurrent `send` calls share the connections as HTTP/2 streams, up to
/// each server's concurrent-stream limit, and share one provider token.
/// A request a connection did not process (GOAWAY, refused stream) moves to
/// another connection by itself; one that may have reached APNs fails with a
/// retryable error (see ``PushVerdict``).
public final class APNsClient: Sendable {
    public let configuration: APNsClientConfiguration
    private let pool: HTTP2ConnectionPool
    private let tokens: APNsTokenProvider?
    private let logger: Logger
    private let metrics: APNsMetrics
    private let authority: String

    public init(
        configuration: APNsClientConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "retract.apns"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) throws(APNsError) {
        self.configuration = configuration
        self.logger = logger
        metrics = APNsMetrics(factory: metricsFactory)
        let environment = configuration.environment
        authority = environment.port == 443 ? environment.host : "\(environment.host):\(environment.port)"
        let tls = try Self.makeTLSContext(configuration)
        switch configuration.authentication {
        case .token(let key, let keyID, let teamID):
            tokens = APNsTokenProvider(key: key, keyID: keyID, teamID: teamID, now: configuration.now)
        case .certificate:
            tokens = nil
        }
        pool = HTTP2ConnectionPool(
            service: "APNs",
            host: environment.host,
            port: environment.port,
            tls: tls,
            group: eventLoopGroup,
            connectionCount: configuration.connectionCount,
            connectTimeout: configuration.connectTimeout,
            logger: logger
        )
    }

    /// Sends one push and waits for APNs's answer.
    ///
    /// After `403 ExpiredProviderToken` it makes a new provider token and sends
    /// once more; refused again, the verdict is a refusal of the credentials.
    public func send(_ request: APNsRequest) async throws(APNsError) -> APNsResponse {
        do {
            try request.validate()
        } catch {
            throw .invalidRequest(error)
        }
        var token = try tokens?.current()
        while true {
            let started = NIODeadline.now()
            let outcome = await exchange(request, token: token)
            let result = Self.result(of: outcome)
            metrics.record(result, duration: NIODeadline.now() - started)
            log(request, result)
            switch result {
            case .success(let response):
                return response
            case .failure(.rejected(let rejection)) where rejection.reason == .expiredProviderToken:
                guard let expired = token, let renewed = try tokens?.expired(expired) else { throw .rejected(rejection) }
                logger.info(
                    "provider token expired; sending again with a new one", metadata: ["apns-id": "\(rejection.apnsID?.uuidString ?? "-")"])
                token = renewed
            case .failure(let error):
                throw error
            }
        }
    }

    /// How many provider tokens were made, for tests: one per ~50 minutes of use.
    public var providerTokensMade: Int { tokens?.tokensMade ?? 0 }

    /// How many connections were opened, for tests and metrics.
    public var connectionsOpened: Int { pool.openedConnectionCount }

    /// Makes room for `inFlight` pushes at once: as many connections as the
    /// server's `SETTINGS_MAX_CONCURRENT_STREAMS` says they take, up to
    /// ``APNsClientConfiguration/maximumConnectionCount``. Connections are
    /// opened as requests come; none is closed for a smaller number.
    public func provision(inFlight: Int) {
        pool.provision(inFlight: inFlight, maximumConnections: configuration.maximumConnectionCount)
    }

    /// Closes the connections; sends still waiting fail with ``APNsError/clientShutdown``.
    public func shutdown() async {
        await pool.shutdown()
    }

    // MARK: - Internals

    private func exchange(_ request: APNsRequest, token: APNsTokenProvider.Token?) async -> HTTP2Exchange.Outcome {
        let headers = headers(for: request, bearer: token?.bearer)
        let deadline = NIODeadline.now() + (request.timeout ?? configuration.requestTimeout)
        return await withCheckedContinuation { continuation in
            pool.submit(
                HTTP2Exchange(headers: headers, body: request.body, deadline: deadline) { outcome in
                    continuation.resume(returning: outcome)
                }
            )
        }
    }

    private func headers(for request: APNsRequest, bearer: String?) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        // Values that repeat (the token, topic, push type) go into the HPACK
        // table and cost an index afterwards; per-push values stay out of it so
        // they do not evict those.
        headers.add(name: ":path", value: "/3/device/" + request.deviceToken, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        if let bearer { headers.add(name: "authorization", value: bearer) }
        headers.add(name: "apns-push-type", value: request.pushType.rawValue)
        headers.add(name: "apns-topic", value: request.topic)
        headers.add(name: "apns-priority", value: request.effectivePriority.headerValue)
        if let expiration = request.expiration {
            headers.add(name: "apns-expiration", value: expiration.headerValue, indexing: .nonIndexable)
        }
        if let collapseID = request.collapseID { headers.add(name: "apns-collapse-id", value: collapseID, indexing: .nonIndexable) }
        if let apnsID = request.apnsID { headers.add(name: "apns-id", value: apnsID.uuidString.lowercased(), indexing: .nonIndexable) }
        return headers
    }

    static func result(of outcome: HTTP2Exchange.Outcome) -> Result<APNsResponse, APNsError> {
        switch outcome {
        case .answered(let status, let headers, let body):
            let apnsID = headers.first(name: "apns-id").flatMap(UUID.init(hyphenatedHex:))
            guard status != 200 else {
                return .success(
                    APNsResponse(apnsID: apnsID, uniqueID: headers.first(name: "apns-unique-id").flatMap(UUID.init(hyphenatedHex:))))
            }
            return .failure(.rejected(APNsRejection(status: status, body: body, apnsID: apnsID)))
        case .notProcessed:
            return .failure(.connectionLost)
        case .failed(let error):
            return .failure(APNsError(error))
        }
    }

    private func log(_ request: APNsRequest, _ result: Result<APNsResponse, APNsError>) {
        switch result {
        case .success(let response):
            logger.debug(
                "push accepted",
                metadata: ["apns-id": "\(response.apnsID?.uuidString ?? "-")", "device": "\(request.deviceToken.prefix(12))…"]
            )
        case .failure(let error):
            logger.debug(
                "push not accepted",
                metadata: ["error": "\(error)", "device": "\(request.deviceToken.prefix(12))…"]
            )
        }
    }

    private static func makeTLSContext(_ configuration: APNsClientConfiguration) throws(APNsError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        // Closing waits this long for the server's close_notify; some servers never send it.
        tls.shutdownTimeout = .seconds(1)
        do {
            let extraRoots = try configuration.additionalTrustRootsPEM.flatMap {
                try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))
            }
            if !extraRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraRoots)] }
        } catch {
            throw .connectFailed("an additional trust root is not a PEM certificate: \(error)")
        }
        if case .certificate(let certificate) = configuration.authentication {
            do {
                switch certificate.source {
                case .pkcs12(let bytes, let passphrase):
                    let bundle = try NIOSSLPKCS12Bundle(buffer: bytes, passphrase: passphrase.map { Array($0.utf8) })
                    tls.certificateChain = bundle.certificateChain.map { .certificate($0) }
                    tls.privateKey = .privateKey(bundle.privateKey)
                case .pem(let chain, let key):
                    tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(chain).map { .certificate($0) }
                    tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: key, format: .pem))
                }
            } catch {
                throw .authenticationUnavailable("the client certificate or its key cannot be read: \(error)")
            }
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw .connectFailed("cannot set up TLS: \(error)")
        }
    }
}

extension APNsRejection {
    /// Reads APNs's error body: `{"reason": "...", "timestamp": <ms>}`.
    init(status: Int, body: ByteBuffer?, apnsID: UUID?) {
        struct ErrorBody: Decodable {
            var reason: String?
            var timestamp: Double?
        }
        let decoded = body.flatMap { try? JSONDecoder().decode(ErrorBody.self, from: Data($0.readableBytesView)) }
        self.init(
            status: status,
            reason: APNsReason(rawValue: decoded?.reason ?? "HTTP \(status)"),
            timestamp: decoded?.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) },
            apnsID: apnsID
        )
    }
}
