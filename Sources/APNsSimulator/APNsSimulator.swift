import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
// Its types (APNsReceivedPush, SimulatorCertificates) are part of this module's API.
@_exported import SimulatorSupport

/// A stand-in for APNs: an HTTP/2 server over TLS that validates requests and
/// answers like APNs, keeps what each device would have received, and
/// misbehaves on request (see ``APNsSimulatorFaults``).
///
/// ```swift
/// let simulator = try await APNsSimulator.start(APNsSimulatorConfiguration(tokenKeys: [key]))
/// // point an APNsClient at .custom(host: "127.0.0.1", port: simulator.port),
/// // trusting simulator.certificateAuthorityPEM
/// let pushes = simulator.inbox(for: deviceToken)
/// try await simulator.stop()
/// ```
public final class APNsSimulator: Sendable {
    /// The port the HTTP/2 server listens on.
    public let port: Int
    /// The port of the plain-HTTP inbox endpoint, when one was asked for.
    public let inboxPort: Int?
    /// The PEM of the authority that issued the server certificate: what a
    /// client must trust. Nil when the certificate came from files.
    public let certificateAuthorityPEM: String?

    /// The listening socket; nil while the simulator is offline.
    private let listener: NIOLockedValueBox<(any Channel)?>
    /// Open client connections, closed when the simulator goes offline.
    private let connections: OpenConnections
    /// Listens again on ``port``.
    private let listen: @Sendable () async throws -> any Channel
    private let stopped: EventLoopPromise<Void>
    private let inboxServer: (any Channel)?
    private let inbox: SimulatorInbox
    private let phones: APNsPhoneMix
    private let offline: OfflineDevices
    private let unregistered: UnregisteredTokens
    private let now: @Sendable () -> Date

    private init(
        server: any Channel,
        listen: @escaping @Sendable () async throws -> any Channel,
        connections: OpenConnections,
        inboxServer: (any Channel)?,
        inbox: SimulatorInbox,
        phones: APNsPhoneMix,
        offline: OfflineDevices,
        unregistered: UnregisteredTokens,
        now: @escaping @Sendable () -> Date,
        certificateAuthorityPEM: String?
    ) {
        listener = NIOLockedValueBox(server)
        self.listen = listen
        self.connections = connections
        stopped = server.eventLoop.makePromise()
        self.inboxServer = inboxServer
        self.inbox = inbox
        self.phones = phones
        self.offline = offline
        self.unregistered = unregistered
        self.now = now
        self.certificateAuthorityPEM = certificateAuthorityPEM
        port = server.localAddress?.port ?? 0
        inboxPort = inboxServer?.localAddress?.port
    }

    public static func start(
        _ configuration: APNsSimulatorConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> APNsSimulator {
        let (tls, authorityPEM) = try makeTLSContext(configuration)
        let inbox = SimulatorInbox(recordsPushes: configuration.recordsInbox, onTokenRefused: configuration.onTokenRefused)
        let unregistered = UnregisteredTokens()
        let offline = OfflineDevices()
        let rules = SimulatorRules(configuration: configuration, unregisteredLater: unregistered)
        let now = configuration.now
        let settings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: configuration.faults.maxConcurrentStreams),
            HTTP2Setting(parameter: .initialWindowSize, value: configuration.faults.initialWindowSize),
            HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
        ]
        let (connection, stream) = http2Configuration(settings: settings)
        let connections = OpenConnections()
        let bootstrap: @Sendable () -> ServerBootstrap = {
            ServerBootstrap(group: eventLoopGroup)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    connections.add(channel)
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            NIOSSLServerHandler(context: tls),
                            RawFrameWriter(),
                            NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: stream),
                            SimulatorConnectionHandler(rules: rules, inbox: inbox, now: now),
                        ])
                    }
                }
        }
        // Written before listening: a client that finds the port open finds the authority to trust too.
        if case .selfSigned(let folder?) = configuration.tls, let authorityPEM {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(authorityPEM.utf8).write(to: folder.appendingPathComponent("simulator-ca.pem"), options: .atomic)
        }
        let server = try await bootstrap().bind(host: configuration.host, port: configuration.port).get()
        let host = configuration.host
        let boundPort = server.localAddress?.port ?? configuration.port
        let listen: @Sendable () async throws -> any Channel = { try await bootstrap().bind(host: host, port: boundPort).get() }
        var inboxServer: (any Channel)?
        if let inboxPort = configuration.inboxPort {
            inboxServer = try await ServerBootstrap(group: eventLoopGroup)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(
                            InboxHTTPHandler(inbox: inbox, phones: configuration.phones, offline: offline, now: now))
                    }
                }
                .bind(host: configuration.host, port: inboxPort)
                .get()
        }
        return APNsSimulator(
            server: server, listen: listen, connections: connections, inboxServer: inboxServer, inbox: inbox,
            phones: configuration.phones, offline: offline, unregistered: unregistered, now: now,
            certificateAuthorityPEM: authorityPEM)
    }

    /// The pushes `deviceToken` (hex, either case) was sent and the simulator accepted, oldest first.
    public func inbox(for deviceToken: String) -> [APNsReceivedPush] {
        inbox.pushes(for: deviceToken)
    }

    /// What `deviceToken`'s phone (its kind from the configuration's
    /// ``APNsSimulatorConfiguration/phones``) displays after the pushes it
    /// was sent, with the times it was offline.
    public func screen(of deviceToken: String) async -> APNsSimulatedDevice.Screen {
        await APNsSimulatedDevice.replay(inbox.pushes(for: deviceToken), on: phone(of: deviceToken))
    }

    /// The phone `deviceToken` is: its kind from the configuration's
    /// ``APNsSimulatorConfiguration/phones``, and when it was offline.
    public func phone(of deviceToken: String) -> APNsSimulatedDevice.Phone {
        phones.phone(for: deviceToken, offline: offline)
    }

    /// The simulator's clock: what it times pushes and offline periods by.
    var currentTime: Date { now() }

    /// `deviceToken`'s phone goes offline now (the simulator's clock): APNs
    /// keeps only the latest push sent to it until ``bringOnline(deviceToken:)``.
    /// The push is still accepted, as APNs accepts it.
    public func takeOffline(deviceToken: String) {
        offline.takeOffline(deviceToken, at: now())
    }

    /// `deviceToken`'s phone is back now: it receives the latest push sent
    /// while it was offline, and the pushes sent from now on.
    public func bringOnline(deviceToken: String) {
        offline.bringOnline(deviceToken, at: now())
    }

    /// Every device's accepted pushes, by lowercase hex token.
    public var inboxes: [String: [APNsReceivedPush]] { inbox.all }

    public var statistics: APNsSimulatorStatistics { inbox.statistics }

    /// From now on, pushes to `deviceToken` are answered `410 Unregistered`
    /// with `since` as the timestamp: the app was uninstalled.
    public func unregister(deviceToken: String, since: Date = Date()) {
        unregistered.add(deviceToken, since: since)
    }

    /// The app registered `deviceToken` again (it was reinstalled, say):
    /// pushes to it are accepted again, whatever the faults said of it.
    public func register(deviceToken: String) {
        unregistered.registerAgain(deviceToken)
    }

    /// Stops listening and cuts every connection, as an outage would: a
    /// client's connects are refused until ``comeBackOnline()``. Pushes
    /// received so far are kept.
    public func goOffline() async {
        let current = listener.withLockedValue { listener in
            defer { listener = nil }
            return listener
        }
        try? await current?.close()
        await connections.closeAll()
    }

    /// Listens again, on the same port, after ``goOffline()``.
    public func comeBackOnline() async throws {
        guard listener.withLockedValue({ $0 == nil }) else { return }
        let server = try await listen()
        listener.withLockedValue { $0 = server }
    }

    /// Whether the simulator listens (it is not offline).
    public var isOnline: Bool { listener.withLockedValue { $0 != nil } }

    /// Forgets the pushes received so far (statistics stay).
    public func clearInbox() {
        inbox.clear()
    }

    /// Returns when the server stops: for a process that only runs the simulator.
    public func waitUntilStopped() async throws {
        try await stopped.futureResult.get()
    }

    public func stop() async throws {
        await goOffline()
        try await inboxServer?.close()
        stopped.succeed()
    }

    /// A client sends as fast as it is let: the simulator must not take that
    /// for an attack.
    private static func http2Configuration(
        settings: HTTP2Settings
    ) -> (NIOHTTP2Handler.ConnectionConfiguration, NIOHTTP2Handler.StreamConfiguration) {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = settings
        connection.maximumConnectionGlitches = .max
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.streamErrorRateLimit.maximumCount = .max
        stream.streamResetFrameRateLimit.maximumCount = .max
        return (connection, stream)
    }

    private static func makeTLSContext(_ configuration: APNsSimulatorConfiguration) throws -> (NIOSSLContext, String?) {
        var tls: TLSConfiguration
        var authorityPEM: String?
        switch configuration.tls {
        case .selfSigned:
            let authority = try SimulatorCertificates.makeAuthority()
            let server = try SimulatorCertificates.issueServerCertificate(from: authority)
            tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem))],
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.privateKeyPEM.utf8), format: .pem))
            )
            authorityPEM = authority.certificatePEM
        case .files(let chain, let key):
            tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(chain).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            )
        }
        tls.applicationProtocols = ["h2"]
        if !configuration.clientCertificateRootsPEM.isEmpty {
            tls.trustRoots = .certificates(
                try configuration.clientCertificateRootsPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
            )
            tls.certificateVerification = .optionalVerification
        }
        return (try NIOSSLContext(configuration: tls), authorityPEM)
    }
}

/// The simulator's open client connections.
final class OpenConnections: Sendable {
    private let channels = NIOLockedValueBox<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLockedValue { $0[id] = channel }
        channel.closeFuture.whenComplete { _ in self.channels.withLockedValue { _ = $0.removeValue(forKey: id) } }
    }

    func closeAll() async {
        let all = channels.withLockedValue { Array($0.values) }
        for channel in all { try? await channel.close() }
    }
}

extension APNsSimulator {
    /// Starts a simulator over TLS that takes provider tokens signed with a
    /// new P-256 key, written into `folder` as Apple issues it
    /// (`AuthKey_<keyID>.p8`) beside the simulator's certificate authority
    /// (`simulator-ca.pem`): what the demo, the tests and the fault suite start.
    ///
    /// - Parameter configuration: anything else; its TLS and token keys are set here.
    /// - Returns: the simulator and the key file's path.
    public static func start(
        withNewKeyIn folder: URL, keyID: String, teamID: String,
        configuration: APNsSimulatorConfiguration = APNsSimulatorConfiguration()
    ) async throws -> (simulator: APNsSimulator, keyPath: String) {
        let key = P256.Signing.PrivateKey()
        let keyPath = folder.appendingPathComponent("AuthKey_\(keyID).p8").path
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        var configuration = configuration
        configuration.tls = .selfSigned(writingTo: folder)
        configuration.tokenKeys.append(APNsSimulatorTokenKey(keyID: keyID, teamID: teamID, publicKey: key.publicKey))
        return (try await start(configuration), keyPath)
    }
}
