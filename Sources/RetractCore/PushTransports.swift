import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import RetractAPNs
import RetractFCM
import RetractKit
import RetractModel
import RetractStore

/// Where the engine gets a transport for an app and a push service.
package protocol TransportProvider: Sendable {
    /// The app's transport for `service`, made on first use and kept.
    func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport
    /// Reads the key, certificate and service account `registration` names
    /// as sending will, so a file that cannot be used is refused before the
    /// app is registered.
    func readCredentials(of registration: AppRegistration) throws(RetractError)
    /// Reads every app's credential files again at the next use (`retract serve` on SIGHUP).
    func reloadCredentials()
    func shutdown() async
}

extension TransportProvider {
    /// Makes the app's transport for each service it has credentials for, so
    /// a credential file that cannot be used is reported before anything is written.
    package func checkTransports(for app: App) throws(RetractError) {
        for service in app.services { _ = try transport(for: app, via: service) }
    }
}

/// One transport per app and service, made from the app's settings in the
/// ledger: its `.p8` key, certificate or service-account file is read from
/// the path stored there when the app first sends through that service.
///
/// Credential files are rotated in place: every `credentialCheckInterval`
/// (and at once after ``reloadCredentials()``) the files are read again, and
/// when their contents changed, a new transport replaces the old one. The
/// old one finishes what it has in flight and is closed two minutes later.
package final class PushTransports: TransportProvider {
    private let settings: APNsSettings
    private let fcmSettings: FCMSettings
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let credentialCheckInterval: Duration
    private let state = NIOLockedValueBox(State())

    private struct Key: Hashable {
        var app: Int64
        var service: PushService
    }

    private struct Entry {
        var transport: any PushTransport
        /// The app as the transport was made for it, and its files' contents then.
        var app: App
        var credentials: CredentialFingerprint
        var checkedAt: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Replaced transports, closed once what they had in flight is answered.
        var retired: [(transport: any PushTransport, at: ContinuousClock.Instant)] = []
        var closing: [Task<Void, Never>] = []
    }

    /// How long a replaced transport is left to finish its pushes in flight.
    static let retiredGrace: Duration = .seconds(120)

    package init(
        settings: APNsSettings = APNsSettings(),
        fcm fcmSettings: FCMSettings = FCMSettings(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "retract.push"),
        credentialCheckInterval: Duration = .seconds(10)
    ) {
        self.settings = settings
        self.fcmSettings = fcmSettings
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.credentialCheckInterval = credentialCheckInterval
    }

    package func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport {
        // Made under the lock: two lanes starting on one app share one client.
        let made: Result<any PushTransport, RetractError> = state.withLockedValue { state in
            let key = Key(app: app.id, service: service)
            let now = ContinuousClock.now
            closeRetired(olderThan: Self.retiredGrace, in: &state)
            if let entry = state.entries[key] {
                if entry.app.sendsAlike(app), now - entry.checkedAt < credentialCheckInterval { return .success(entry.transport) }
                let credentials = CredentialFingerprint(of: app, for: service)
                if entry.app.sendsAlike(app), credentials == entry.credentials {
                    state.entries[key]?.checkedAt = now
                    return .success(entry.transport)
                }
            }
            let credentials = CredentialFingerprint(of: app, for: service)
            let made = Result { () throws(RetractError) -> any PushTransport in
                switch service {
                case .apns: try makeAPNsTransport(app)
                case .fcm: try makeFCMTransport(app)
                }
            }
            switch (made, state.entries[key]) {
            case (.success(let transport), let replaced):
                if let replaced {
                    logger.notice(
                        "the app's credentials changed; new pushes use them", metadata: ["app": "\(app.name)", "service": "\(service)"])
                    state.retired.append((replaced.transport, now))
                }
                state.entries[key] = Entry(transport: transport, app: app, credentials: credentials, checkedAt: now)
                return made
            case (.failure(let error), let kept?):
                // A file caught half-way through its rotation: the credentials in hand go on until the next check.
                logger.warning(
                    "the app's credential files changed but cannot be used; the ones read before go on",
                    metadata: ["app": "\(app.name)", "service": "\(service)", "error": "\(error.message)"])
                state.entries[key]?.checkedAt = now
                return .success(kept.transport)
            case (.failure, nil):
                return made
            }
        }
        return try made.get()
    }

    package func reloadCredentials() {
        state.withLockedValue { state in
            for key in state.entries.keys { state.entries[key]?.checkedAt = .now - credentialCheckInterval }
        }
        logger.notice("credential files will be read again before the next push")
    }

    package func shutdown() async {
        let (all, closing) = state.withLockedValue { state in
            closeRetired(olderThan: .zero, in: &state)
            defer { state = State() }
            return (state.entries.values.map(\.transport), state.closing)
        }
        for transport in all { await transport.shutdown() }
        for task in closing { await task.value }
    }

    /// Starts closing the transports replaced more than `grace` ago.
    private func closeRetired(olderThan grace: Duration, in state: inout State) {
        let now = ContinuousClock.now
        let due = state.retired.filter { now - $0.at >= grace }
        guard !due.isEmpty else { return }
        state.retired.removeAll { now - $0.at >= grace }
        // Kept, and awaited by shutdown(): no task outlives the transports.
        state.closing.append(Task { for retired in due { await retired.transport.shutdown() } })
    }

    package func readCredentials(of registration: AppRegistration) throws(RetractError) {
        if registration.authentication != .fcmOnly {
            try Self.readAPNsCredentials(registration.authentication, app: registration.name, passphrase: settings.certificatePassphrase)
        }
        if let path = registration.fcmServiceAccountPath {
            do {
                _ = try Self.fcmServiceAccount(path: path, app: registration.name)
            } catch {
                var error = error
                error.field = "fcmServiceAccountPath"
                throw error
            }
        }
    }

    private func makeAPNsTransport(_ app: App) throws(RetractError) -> APNsTransport {
        let configuration = APNsClientConfiguration(
            environment: try Self.environment(of: app),
            authentication: try Self.authentication(app.authentication, app: app.name, passphrase: settings.certificatePassphrase),
            additionalTrustRootsPEM: settings.additionalTrustRootsPEM,
            connectionCount: min(APNsSettings.firstConnections, settings.connectionsPerApp),
            maximumConnectionCount: settings.connectionsPerApp,
            requestTimeout: settings.requestTimeout
        )
        do {
            let client = try APNsClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)
            return APNsTransport(client: client, topic: app.topic)
        } catch {
            throw RetractError(.credentials, "app \(app.name): \(error)", paths: app.credentialPaths)
        }
    }

    private func makeFCMTransport(_ app: App) throws(RetractError) -> FCMTransport {
        let account = try Self.fcmServiceAccount(of: app)
        do {
            let client = try FCMClient(
                account: account, configuration: fcmSettings.clientConfiguration, eventLoopGroup: eventLoopGroup, logger: logger)
            return FCMTransport(client: client)
        } catch {
            throw RetractError(.credentials, "app \(app.name): \(error)", paths: app.credentialPaths)
        }
    }

    /// Reads the service-account file the app names.
    ///
    /// - Throws: ``RetractError/Code/credentials`` when the app has none or it cannot be used.
    package static func fcmServiceAccount(of app: App) throws(RetractError) -> FCMServiceAccount {
        guard let path = app.fcmServiceAccountPath else {
            throw RetractError(.credentials, App.missingCredentials(for: .fcm, app: app.name))
        }
        return try fcmServiceAccount(path: path, app: app.name)
    }

    /// Reads the service-account file at `path`.
    package static func fcmServiceAccount(path: String, app: String) throws(RetractError) -> FCMServiceAccount {
        do {
            return try FCMServiceAccount(contentsOfFile: path)
        } catch {
            throw RetractError(.credentials, "app \(app): \(error.message)", paths: [path])
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
    private static func readAPNsCredentials(
        _ authentication: App.Authentication, app: String, passphrase: String?
    ) throws(RetractError) {
        let field = if case .certificate = authentication { "certificatePath" } else { "keyPath" }
        let credentials: APNsAuthentication
        do {
            credentials = try Self.authentication(authentication, app: app, passphrase: passphrase)
        } catch {
            var error = error
            error.field = field
            throw error
        }
        guard case .certificate = credentials else { return }
        // Making a client builds its TLS context; it connects only when it sends.
        do {
            _ = try APNsClient(configuration: APNsClientConfiguration(environment: .sandbox, authentication: credentials))
        } catch {
            throw RetractError(.credentials, "app \(app): \(error)", field: field)
        }
    }

    /// Reads the key or certificate `authentication` points at.
    ///
    /// - Throws: ``RetractError/Code/credentials``, naming the file and what is wrong with it.
    package static func authentication(
        _ authentication: App.Authentication, app: String, passphrase: String?
    ) throws(RetractError) -> APNsAuthentication {
        switch authentication {
        case .token(let keyID, let teamID, let keyPath):
            guard let pem = try? String(contentsOfFile: keyPath, encoding: .utf8) else {
                throw RetractError(
                    .credentials, "app \(app): the APNs key \(keyPath) cannot be read (\(fileProblem(keyPath)))", paths: [keyPath])
            }
            guard let key = try? APNsSigningKey(pem: pem) else {
                throw RetractError(
                    .credentials, "app \(app): the APNs key \(keyPath) is not a P-256 private key in PEM form (.p8)", paths: [keyPath])
            }
            return .token(key: key, keyID: keyID, teamID: teamID)
        case .fcmOnly:
            throw RetractError(.credentials, App.missingCredentials(for: .apns, app: app))
        case .certificate(let path):
            let bytes: [UInt8]
            do {
                bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw RetractError(
                    .credentials, "app \(app): the APNs certificate \(path) cannot be read (\(fileProblem(path)))", paths: [path])
            }
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.contains("-----BEGIN") else { return .certificate(.pkcs12(bytes, passphrase: passphrase)) }
            guard text.contains("PRIVATE KEY-----") else {
                throw RetractError(
                    .credentials, "app \(app): the APNs certificate \(path) holds no private key; put the key in the same PEM file",
                    paths: [path])
            }
            return .certificate(.pem(certificateChain: bytes, privateKey: bytes))
        }
    }
}

/// What an app's credential files for one service hold, to see whether
/// they changed: each file's SHA-256, or that it could not be read.
struct CredentialFingerprint: Hashable {
    private var files: [String: [UInt8]?]

    init(of app: App, for service: PushService) {
        var paths: [String] = []
        switch service {
        case .apns:
            switch app.authentication {
            case .token(_, _, let keyPath): paths = [keyPath]
            case .certificate(let path): paths = [path]
            case .fcmOnly: paths = []
            }
        case .fcm:
            paths = app.fcmServiceAccountPath.map { [$0] } ?? []
        }
        files = Dictionary(
            uniqueKeysWithValues: paths.map { path in
                (path, FileManager.default.contents(atPath: path).map { Array(SHA256.hash(data: $0)) })
            })
    }
}
