import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Connection slots, filled on demand and refilled when a connection
/// retires, and added when more requests are to be in flight than the
/// connections' stream limit carries
/// (``provision(inFlight:maximumConnections:)``); which slot a request goes
/// to and how long a slot backs off are ``ConnectionSlots``'s. A request a connection did not process goes
/// to another one. A connect has worked only once the server's SETTINGS
/// arrive: a TCP connection whose TLS handshake then fails counts as a
/// failed connect.
///
/// `APNsClient` and `FCMClient` both send through it; `service` names the
/// server in its log messages.
package final class HTTP2ConnectionPool: Sendable {
    private let service: String
    private let host: String
    private let port: Int
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private let state: NIOLockedValueBox<ConnectionSlots<HTTP2Connection, HTTP2Exchange>>

    package init(
        service: String,
        host: String,
        port: Int,
        tls: NIOSSLContext,
        group: any EventLoopGroup,
        connectionCount: Int,
        connectTimeout: TimeAmount,
        logger: Logger
    ) {
        self.service = service
        self.host = host
        self.port = port
        self.tls = tls
        self.group = group
        self.connectTimeout = connectTimeout
        self.logger = logger
        self.state = NIOLockedValueBox(ConnectionSlots(count: connectionCount))
    }

    /// How many connections the pool has opened, for tests and metrics.
    package var openedConnectionCount: Int { state.withLockedValue { $0.connectionsOpened } }

    /// Adds slots until they carry `inFlight` requests at the server's stream
    /// limit (the largest a connection was told; RFC 9113's 100 before any),
    /// at most `maximumConnections`.
    package func provision(inFlight: Int, maximumConnections: Int) {
        let grown = state.withLockedValue { $0.provision(inFlight: inFlight, maximumConnections: maximumConnections) }
        if let grown { logger.debug("more \(service) connections", metadata: ["host": "\(host)", "connections": "\(grown)"]) }
    }

    /// Sends `exchange` on some connection. One the server did not process
    /// moves to another connection until its deadline.
    package func submit(_ exchange: HTTP2Exchange) {
        var routed = exchange
        routed.complete = { outcome in
            guard case .notProcessed = outcome else {
                exchange.complete(outcome)
                return
            }
            if NIODeadline.now() < exchange.deadline {
                self.submit(exchange)
            } else {
                exchange.complete(.failed(.timedOut))
            }
        }
        let now = NIODeadline.now()
        switch state.withLockedValue({ $0.route(routed, now: now) }) {
        case .send(let connection):
            connection.submit(routed)
        case .connect(let slot, let connection):
            connection?.submit(routed)
            connect(slot: slot)
        case .queued:
            break
        case .fail(let error):
            exchange.complete(.failed(error))
        }
    }

    private func connect(slot: Int) {
        let connection = NIOLockedValueBox<HTTP2Connection?>(nil)
        let events = HTTP2ConnectionHandler.Events(
            established: { [weak self] in self?.established(slot: slot) },
            streamLimit: { [weak self] limit in self?.state.withLockedValue { $0.heard(streamLimit: limit) } },
            retired: { [weak self] setupFailure in
                guard let retired = connection.withLockedValue({ $0 }) else { return }
                self?.retire(slot: slot, connection: retired, setupFailure: setupFailure)
            })
        HTTP2Connection.connect(
            host: host,
            port: port,
            tls: tls,
            on: group.next(),
            timeout: connectTimeout,
            events: events
        ).whenComplete { result in
            switch result {
            case .success(let established):
                connection.withLockedValue { $0 = established }
                self.connected(slot: slot, connection: established)
            case .failure(let error):
                self.connectFailed(slot: slot, error: error)
            }
        }
    }

    /// TCP is connected; TLS and HTTP/2 are still being set up, and the
    /// requests given to the connection wait for the server's SETTINGS.
    private func connected(slot: Int, connection: HTTP2Connection) {
        let (waiting, close) = state.withLockedValue { $0.connected(slot: slot, connection: connection) }
        if close {
            connection.close()
            for exchange in waiting { exchange.complete(.failed(.clientShutdown)) }
            return
        }
        logger.debug("connected to \(service)", metadata: ["host": "\(host)", "slot": "\(slot)"])
        for exchange in waiting { connection.submit(exchange) }
    }

    /// The server's SETTINGS arrived: connecting worked, the backoff starts over.
    private func established(slot: Int) {
        state.withLockedValue { $0.established(slot: slot) }
    }

    private func connectFailed(slot: Int, error: any Error) {
        // The connection's own account when it closed during setup (a refused
        // client certificate, an untrusted server); otherwise what connecting threw.
        let failure = error as? HTTP2TransportError ?? .connectFailed("\(error)")
        let now = NIODeadline.now()
        let (waiting, delay) = state.withLockedValue { $0.connectFailed(slot: slot, failure: failure, now: now) }
        logger.warning(
            "cannot connect to \(service)",
            metadata: ["host": "\(host)", "error": "\(error)", "retry-in": "\(delay.nanoseconds / 1_000_000_000)s"]
        )
        for exchange in waiting { exchange.complete(.failed(failure)) }
    }

    /// A connection takes no new requests: its slot is refilled on demand,
    /// after the backoff when it closed before it was set up.
    private func retire(slot: Int, connection: HTTP2Connection, setupFailure: HTTP2TransportError?) {
        let now = NIODeadline.now()
        state.withLockedValue { $0.retire(slot: slot, connection: connection, setupFailure: setupFailure, now: now) }
        connection.closeFuture.whenComplete { _ in
            self.state.withLockedValue { $0.drained(connection) }
        }
        logger.debug("\(service) connection retired", metadata: ["slot": "\(slot)"])
    }

    package func shutdown() async {
        let (connections, waiting) = state.withLockedValue { $0.shutdown() }
        for exchange in waiting { exchange.complete(.failed(.clientShutdown)) }
        for connection in connections {
            connection.close()
            try? await connection.closeFuture.get()
        }
    }
}
