import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import RetractAPNs
import RetractKit
import RetractStore

/// How the engine talks to APNs, for every app alike.
public struct APNsSettings: Sendable {
    /// Extra root certificates (PEM) to trust: a private endpoint, the simulator.
    public var additionalTrustRootsPEM: [String]
    /// HTTP/2 connections per app; each carries up to APNs's stream limit.
    public var connectionsPerApp: Int
    public var requestTimeout: TimeAmount
    /// Attempts and backoff for retryable answers (429, 5xx, lost connections).
    public var retryPolicy: RetryPolicy
    /// A passphrase for PKCS#12 client certificates.
    public var certificatePassphrase: String?

    public init(
        additionalTrustRootsPEM: [String] = [],
        connectionsPerApp: Int = 2,
        requestTimeout: TimeAmount = .seconds(30),
        retryPolicy: RetryPolicy = RetryPolicy(maximumAttempts: 10, baseDelay: .milliseconds(250), maximumDelay: .seconds(30)),
        certificatePassphrase: String? = nil
    ) {
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.connectionsPerApp = connectionsPerApp
        self.requestTimeout = requestTimeout
        self.retryPolicy = retryPolicy
        self.certificatePassphrase = certificatePassphrase
    }
}

/// Sends one app's pushes through an ``APNsClient``.
public final class APNsTransport: PushTransport {
    private let client: APNsClient
    private let topic: String
    private let policy: RetryPolicy

    public init(client: APNsClient, topic: String, policy: RetryPolicy) {
        self.client = client
        self.topic = topic
        self.policy = policy
    }

    public func send(_ push: OutgoingPush, attempt: Int) async -> PushOutcome {
        let request: APNsRequest
        switch push.kind {
        case .retraction:
            request = APNsRequest(deviceToken: push.token.hex, topic: topic, pushType: .background, body: push.body)
        case .original(let visible, let collapseID):
            request = APNsRequest(
                deviceToken: push.token.hex, topic: topic, pushType: visible ? .alert : .background, collapseID: collapseID,
                body: push.body)
        }
        let result: Result<APNsResponse, APNsError>
        do {
            result = .success(try await client.send(request))
        } catch {
            result = .failure(error)
        }
        var random = SystemRandomNumberGenerator()
        return Self.outcome(of: result, disposition: APNsDisposition(classifying: result, attempt: attempt, policy: policy, using: &random))
    }

    public func shutdown() async {
        await client.shutdown()
    }

    static func outcome(of result: Result<APNsResponse, APNsError>, disposition: APNsDisposition) -> PushOutcome {
        // The key or certificate cannot be used at all: no push of the app can go.
        if case .failure(.authenticationUnavailable(let problem)) = result { return .authenticationFailed(reason: problem) }
        let reason: String
        switch result {
        case .success: reason = ""
        case .failure(.rejected(let rejection)): reason = rejection.reason.rawValue
        case .failure(let error): reason = "\(error)"
        }
        switch disposition {
        case .delivered:
            return .accepted
        case .retry(let delay):
            return .retry(after: .nanoseconds(delay.nanoseconds), reason: reason)
        case .tokenDead(let since):
            return .tokenDead(since: since ?? Date(), reason: reason)
        case .refreshAuthenticationAndRetry:
            // APNsClient already made a new provider token once; expired again means the clock or the key is wrong.
            return .authenticationFailed(reason: "\(reason) even with a new provider token")
        case .authenticationFailed(let apnsReason):
            return .authenticationFailed(reason: apnsReason.rawValue)
        case .permanentFailure:
            return .failed(reason: reason)
        case .retriesExhausted:
            return .failed(reason: "no success after the last attempt: \(reason)")
        }
    }
}

/// Where the engine gets a transport for an app.
public protocol TransportProvider: Sendable {
    /// The app's transport, made on first use and kept.
    func transport(for app: App) throws(RetractError) -> any PushTransport
    func shutdown() async
}

/// One ``APNsTransport`` per app, made from the app's settings in the ledger:
/// its `.p8` key (or certificate) is read from the path stored there when
/// the app is first used.
public final class APNsTransports: TransportProvider {
    private let settings: APNsSettings
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let transports = NIOLockedValueBox<[Int64: APNsTransport]>([:])

    public init(
        settings: APNsSettings = APNsSettings(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "retract.apns")
    ) {
        self.settings = settings
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
    }

    public func transport(for app: App) throws(RetractError) -> any PushTransport {
        // Made under the lock: two lanes starting on one app share one client.
        let made: Result<APNsTransport, RetractError> = transports.withLockedValue { transports in
            if let existing = transports[app.id] { return .success(existing) }
            let made = Result { () throws(RetractError) in try makeTransport(app) }
            if case .success(let transport) = made { transports[app.id] = transport }
            return made
        }
        return try made.get()
    }

    public func shutdown() async {
        let all = transports.withLockedValue { transports in
            defer { transports = [:] }
            return Array(transports.values)
        }
        for transport in all { await transport.shutdown() }
    }

    private func makeTransport(_ app: App) throws(RetractError) -> APNsTransport {
        let configuration = APNsClientConfiguration(
            environment: try Self.environment(of: app),
            authentication: try Self.authentication(app.authentication, app: app.name, passphrase: settings.certificatePassphrase),
            additionalTrustRootsPEM: settings.additionalTrustRootsPEM,
            connectionCount: settings.connectionsPerApp,
            requestTimeout: settings.requestTimeout
        )
        do {
            let client = try APNsClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)
            return APNsTransport(client: client, topic: app.topic, policy: settings.retryPolicy)
        } catch {
            throw RetractError(.credentials, "app \(app.name): \(error)")
        }
    }

    static func environment(of app: App) throws(RetractError) -> APNsEnvironment {
        guard let endpoint = app.endpoint else { return app.environment == .production ? .production : .sandbox }
        guard let url = URLComponents(string: endpoint), url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw RetractError(.invalidInput, "app \(app.name): endpoint \"\(endpoint)\" is not an https:// URL")
        }
        return .custom(host: host, port: url.port ?? 443)
    }

    /// Reads the key or certificate `authentication` points at, and for a
    /// certificate sets up TLS with it, as sending will: a file that cannot
    /// be used is found before anything is written.
    public static func checkCredentials(_ authentication: App.Authentication, app: String, passphrase: String?) throws(RetractError) {
        let credentials = try Self.authentication(authentication, app: app, passphrase: passphrase)
        guard case .certificate = credentials else { return }
        // Making a client builds its TLS context; it connects only when it sends.
        do {
            _ = try APNsClient(configuration: APNsClientConfiguration(environment: .sandbox, authentication: credentials))
        } catch {
            throw RetractError(.credentials, "app \(app): \(error)")
        }
    }

    /// Reads the key or certificate `authentication` points at.
    ///
    /// - Throws: ``RetractError/Code/credentials``, naming the file and what is wrong with it.
    public static func authentication(
        _ authentication: App.Authentication, app: String, passphrase: String?
    ) throws(RetractError) -> APNsAuthentication {
        switch authentication {
        case .token(let keyID, let teamID, let keyPath):
            guard let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) else {
                throw RetractError(.credentials, "app \(app): the APNs key \(keyPath) cannot be read (\(fileProblem(keyPath)))")
            }
            guard let key = try? APNsSigningKey(pem: pem) else {
                throw RetractError(.credentials, "app \(app): the APNs key \(keyPath) is not a P-256 private key in PEM form (.p8)")
            }
            return .token(key: key, keyID: keyID, teamID: teamID)
        case .certificate(let path):
            let bytes: [UInt8]
            do {
                bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw RetractError(.credentials, "app \(app): the APNs certificate \(path) cannot be read (\(fileProblem(path)))")
            }
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.contains("-----BEGIN") else { return .certificate(.pkcs12(bytes, passphrase: passphrase)) }
            guard text.contains("PRIVATE KEY-----") else {
                throw RetractError(.credentials, "app \(app): the APNs certificate \(path) holds no private key; put the key in the same PEM file")
            }
            return .certificate(.pem(certificateChain: bytes, privateKey: bytes))
        }
    }
}

/// Why a file cannot be read, in a few words.
func fileProblem(_ path: String) -> String {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "no such file" }
    if isDirectory.boolValue { return "it is a directory" }
    return FileManager.default.isReadableFile(atPath: path) ? "unreadable" : "permission denied"
}
