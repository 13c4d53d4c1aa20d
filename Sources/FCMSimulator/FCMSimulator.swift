import Foundation
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import RetractFCM
import ServiceLifecycle
// Its types (APNsReceivedPush, SimulatorCertificates) are part of this module's API.
@_exported import SimulatorSupport
import _CryptoExtras

/// A stand-in for FCM HTTP v1 and Google's token endpoint, over HTTP/2 and
/// TLS: it checks each assertion's RS256 signature against the service
/// accounts it knows, issues access tokens that expire, validates each
/// message as FCM and APNs would, answers scripted faults per device token
/// (see ``FCMFault``), and keeps what each device received.
///
/// ```swift
/// let account = try FCMSimulator.makeServiceAccount(projectID: "shop-app")
/// let simulator = try await FCMSimulator.start(FCMSimulatorConfiguration(accounts: [.init(account)]))
/// // FCMClientConfiguration(messagesBaseURL: simulator.baseURL, tokenURI: simulator.tokenURI,
/// //                        additionalTrustRootsPEM: [simulator.certificateAuthorityPEM])
/// ```
public final class FCMSimulator: Sendable {
    public let port: Int
    /// The PEM of the authority that issued the server certificate: what a client must trust.
    public let certificateAuthorityPEM: String
    private let state: SimulatorState
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let host: String

    private init(
        port: Int, host: String, certificateAuthorityPEM: String, state: SimulatorState, group: ServiceGroup, task: Task<Void, any Error>
    ) {
        self.port = port
        self.group = group
        self.host = host
        self.certificateAuthorityPEM = certificateAuthorityPEM
        self.state = state
        self.task = task
    }

    /// `https://host:port`, the base of `/v1/projects/<project>/messages:send`.
    public var baseURL: String { "https://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    /// The token endpoint: what assertions' `aud` must be.
    public var tokenURI: String { baseURL + "/token" }

    public static func start(_ configuration: FCMSimulatorConfiguration) async throws -> FCMSimulator {
        let authority = try SimulatorCertificates.makeAuthority(name: "Retract FCM simulator CA")
        let server = try SimulatorCertificates.issueServerCertificate(from: authority)
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.privateKeyPEM.utf8), format: .pem))
        )
        let state = SimulatorState(recordsInbox: configuration.recordsInbox)
        let routes = SimulatorRoutes(configuration: configuration, state: state)
        let router = Router(context: SimulatorRequestContext.self)
        routes.register(on: router)
        let (listening, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "retract.fcm-simulator")
        logger.logLevel = .warning
        let application = Application(
            router: router,
            server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "fcm-simulator"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(services: [application], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = listening.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            // The server could not start: its error says why.
            try await task.value
            throw FCMSimulatorError("the FCM simulator did not start on \(configuration.host):\(configuration.port)")
        }
        return FCMSimulator(
            port: port, host: configuration.host, certificateAuthorityPEM: authority.certificatePEM, state: state, group: group, task: task)
    }

    /// Makes a service account with a new 2048-bit RSA key, as Google would
    /// issue it; give it the simulator's ``tokenURI`` to have the file point there.
    public static func makeServiceAccount(
        projectID: String, clientEmail: String? = nil, tokenURI: String = FCMServiceAccount.defaultTokenURI
    ) throws -> FCMServiceAccount {
        FCMServiceAccount(
            projectID: projectID, clientEmail: clientEmail ?? "retract@\(projectID).iam.gserviceaccount.com",
            privateKeyID: UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
            tokenURI: tokenURI, privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    /// Messages accepted for `token`, oldest first.
    public func inbox(for token: String) -> [FCMReceivedMessage] { state.inbox(for: token) }
    /// Every device's accepted messages, by token.
    public var inboxes: [String: [FCMReceivedMessage]] { state.inboxes }
    public var statistics: FCMSimulatorStatistics { state.statistics }

    /// The next messages to `token` meet `faults`, one each, in order; then it is accepted again.
    public func script(_ faults: [FCMFault], for token: String) { state.script(faults, for: token) }
    /// From now on every message to `token` is answered `UNREGISTERED`.
    public func unregister(_ token: String) { state.unregister(token) }
    public func clearInbox() { state.clearInbox() }
    /// Forgets every access token issued so far, as Google does when a key is
    /// deleted: messages sent with one are answered `UNAUTHENTICATED`.
    public func revokeAccessTokens() { state.revokeAccessTokens() }

    /// Stops taking connections, finishes the requests in flight and returns when the server is closed.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// Returns when the server stops: for a process that only runs the simulator.
    public func waitUntilStopped() async {
        _ = try? await task.value
    }
}

/// The simulator could not start.
public struct FCMSimulatorError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
