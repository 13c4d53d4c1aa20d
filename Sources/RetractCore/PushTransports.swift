import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import RetractAPNs
import RetractFCM
import RetractKit
import RetractStore

/// Where the engine gets a transport for an app and a push service.
public protocol TransportProvider: Sendable {
    /// The app's transport for `service`, made on first use and kept.
    func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport
    func shutdown() async
}

extension TransportProvider {
    /// Makes the app's transport for each service it has credentials for, so
    /// a credential file that cannot be used is reported before anything is written.
    public func checkTransports(for app: App) throws(RetractError) {
        for service in app.services { _ = try transport(for: app, via: service) }
    }
}

/// One transport per app and service, made from the app's settings in the
/// ledger: its `.p8` key, certificate or service-account file is read from
/// the path stored there when the app first sends through that service.
public final class PushTransports: TransportProvider {
    private let settings: APNsSettings
    private let fcmSettings: FCMSettings
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let transports = NIOLockedValueBox<[Key: any PushTransport]>([:])

    private struct Key: Hashable {
        var app: Int64
        var service: PushService
    }

    public init(
        settings: APNsSettings = APNsSettings(),
        fcm fcmSettings: FCMSettings = FCMSettings(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "retract.push")
    ) {
        self.settings = settings
        self.fcmSettings = fcmSettings
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
    }

    public func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport {
        // Made under the lock: two lanes starting on one app share one client.
        let made: Result<any PushTransport, RetractError> = transports.withLockedValue { transports in
            let key = Key(app: app.id, service: service)
            if let existing = transports[key] { return .success(existing) }
            let made = Result { () throws(RetractError) -> any PushTransport in
                switch service {
                case .apns: try makeAPNsTransport(app)
                case .fcm: try makeFCMTransport(app)
                }
            }
            if case .success(let transport) = made { transports[key] = transport }
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

    private func makeAPNsTransport(_ app: App) throws(RetractError) -> APNsTransport {
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

    private func makeFCMTransport(_ app: App) throws(RetractError) -> FCMTransport {
        let account = try Self.fcmServiceAccount(of: app)
        do {
            let client = try FCMClient(
                account: account, configuration: fcmSettings.clientConfiguration, eventLoopGroup: eventLoopGroup, logger: logger)
            return FCMTransport(client: client, policy: fcmSettings.retryPolicy)
        } catch {
            throw RetractError(.credentials, "app \(app.name): \(error)")
        }
    }

    /// Reads the service-account file the app names.
    ///
    /// - Throws: ``RetractError/Code/credentials`` when the app has none or it cannot be used.
    public static func fcmServiceAccount(of app: App) throws(RetractError) -> FCMServiceAccount {
        guard let path = app.fcmServiceAccountPath else {
            throw RetractError(.credentials, App.missingCredentials(for: .fcm, app: app.name))
        }
        return try fcmServiceAccount(path: path, app: app.name)
    }

    /// Reads the service-account file at `path`.
    public static func fcmServiceAccount(path: String, app: String) throws(RetractError) -> FCMServiceAccount {
        do {
            return try FCMServiceAccount(contentsOfFile: path)
        } catch {
            throw RetractError(.credentials, "app \(app): \(error.message)")
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
        case .fcmOnly:
            throw RetractError(.credentials, App.missingCredentials(for: .apns, app: app))
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
                throw RetractError(
                    .credentials, "app \(app): the APNs certificate \(path) holds no private key; put the key in the same PEM file")
            }
            return .certificate(.pem(certificateChain: bytes, privateKey: bytes))
        }
    }
}
