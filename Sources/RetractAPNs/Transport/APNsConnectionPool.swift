import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// A fixed number of connection slots, filled on demand and refilled when a
/// connection retires.
///
/// Requests go round-robin over the slots: a ready slot takes the request, an
/// empty one starts connecting while the request goes to any ready connection
/// (or waits for this one). A request a connection did not process goes to
/// another one. After a failed connect a slot waits before trying again
/// (1 s, doubling to 30 s): APNs treats rapid reconnecting as abuse. A
/// connect has worked only once the server's SETTINGS arrive: a TCP
/// connection whose TLS handshake then fails counts as a failed connect.
final class APNsConnectionPool: Sendable {
    private enum Slot {
        case empty
        case connecting(waiting: [APNsExchange])
        case ready(APNsConnection)
        /// Connecting failed; no new attempt before `until`, and requests
        /// meanwhile fail with `reason`.
        case backingOff(until: NIODeadline, reason: APNsError)
    }

    private struct State {
        var slots: [Slot]
        var failedConnects: [Int]
        var next = 0
        var isShutDown = false
        /// Connections that retired but may still be answering, closed at shutdown.
        var draining: [ObjectIdentifier: APNsConnection] = [:]
        var connectionsOpened = 0
    }

    private enum Route {
        case send(APNsConnection)
        case connect(slot: Int, sendTo: APNsConnection?)
        case queued
        case fail(APNsError)
    }

    private let host: String
    private let port: Int
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    init(
        host: String,
        port: Int,
        tls: NIOSSLContext,
        group: any EventLoopGroup,
        connectionCount: Int,
        connectTimeout: TimeAmount,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.group = group
        self.connectTimeout = connectTimeout
        self.logger = logger
        let count = max(connectionCount, 1)
        self.state = NIOLockedValueBox(
            State(slots: Array(repeating: .empty, count: count), failedConnects: Array(repeating: 0, count: count)))
    }

    /// How many connections the pool has opened, for tests and metrics.
    var openedConnectionCount: Int { state.withLockedValue { $0.connectionsOpened } }

    /// Sends `exchange` on some connection. One the server did not process
    /// moves to another connection until its deadline.
    func submit(_ exchange: APNsExchange) {
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
        switch state.withLockedValue({ Self.route(routed, in: &$0) }) {
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

    private static func route(_ exchange: APNsExchange, in state: inout State) -> Route {
        guard !state.isShutDown else { return .fail(.clientShutdown) }
        let index = state.next
        state.next = (state.next + 1) % state.slots.count
        // A connection can stop taking requests before its retirement reaches
        // the pool; sending to it would bounce the request straight back here.
        // Its slot is free again (it closes itself once its streams are answered).
        if case .ready(let connection) = state.slots[index], !connection.acceptsRequests {
            state.slots[index] = .empty
        }
        // Only needed when the slot is not ready, which is rare once connected.
        var anyReady: APNsConnection? {
            state.slots.lazy.compactMap { slot -> APNsConnection? in
                if case .ready(let connection) = slot, connection.acceptsRequests { return connection }
                return nil
            }.first
        }
        switch state.slots[index] {
        case .ready(let connection):
            return .send(connection)
        case .empty:
            // Fill the slot; the request goes to a ready connection if there is one.
            let ready = anyReady
            state.slots[index] = .connecting(waiting: ready == nil ? [exchange] : [])
            state.connectionsOpened += 1
            return .connect(slot: index, sendTo: ready)
        case .connecting(var waiting):
            if let anyReady { return .send(anyReady) }
            waiting.append(exchange)
            state.slots[index] = .connecting(waiting: waiting)
            return .queued
        case .backingOff(let until, let reason):
            if let anyReady { return .send(anyReady) }
            guard NIODeadline.now() >= until else { return .fail(reason) }
            state.slots[index] = .connecting(waiting: [exchange])
            state.connectionsOpened += 1
            return .connect(slot: index, sendTo: nil)
        }
    }

    private func connect(slot: Int) {
        let connection = NIOLockedValueBox<APNsConnection?>(nil)
        let events = APNsConnectionHandler.Events(
            established: { [weak self] in self?.established(slot: slot) },
            retired: { [weak self] setupFailure in
                guard let retired = connection.withLockedValue({ $0 }) else { return }
                self?.retire(slot: slot, connection: retired, setupFailure: setupFailure)
            })
        APNsConnection.connect(
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
    private func connected(slot: Int, connection: APNsConnection) {
        let (waiting, isShutDown): ([APNsExchange], Bool) = state.withLockedValue { state in
            guard case .connecting(let waiting) = state.slots[slot] else { return ([], state.isShutDown) }
            state.slots[slot] = state.isShutDown ? .empty : .ready(connection)
            return (waiting, state.isShutDown)
        }
        if isShutDown {
            connection.close()
            for exchange in waiting { exchange.complete(.failed(.clientShutdown)) }
            return
        }
        logger.debug("connected to APNs", metadata: ["host": "\(host)", "slot": "\(slot)"])
        for exchange in waiting { connection.submit(exchange) }
    }

    /// The server's SETTINGS arrived: connecting worked, the backoff starts over.
    private func established(slot: Int) {
        state.withLockedValue { $0.failedConnects[slot] = 0 }
    }

    private func connectFailed(slot: Int, error: any Error) {
        let reason = "\(error)"
        let (waiting, delay): ([APNsExchange], TimeAmount) = state.withLockedValue { state in
            let delay = Self.backOff(slot: slot, in: &state)
            guard case .connecting(let waiting) = state.slots[slot] else { return ([], delay) }
            state.slots[slot] = .backingOff(until: .now() + delay, reason: .connectFailed(reason))
            return (waiting, delay)
        }
        logger.warning(
            "cannot connect to APNs",
            metadata: ["host": "\(host)", "error": "\(error)", "retry-in": "\(delay.nanoseconds / 1_000_000_000)s"]
        )
        for exchange in waiting { exchange.complete(.failed(.connectFailed(reason))) }
    }

    /// One more failed connect for `slot`: how long it waits before the next.
    private static func backOff(slot: Int, in state: inout State) -> TimeAmount {
        state.failedConnects[slot] += 1
        return .seconds(min(Int64(1) << min(state.failedConnects[slot] - 1, 5), 30))
    }

    /// A connection takes no new requests: its slot is refilled on demand,
    /// after the backoff when it closed before it was set up.
    private func retire(slot: Int, connection: APNsConnection, setupFailure: APNsError?) {
        let id = ObjectIdentifier(connection)
        state.withLockedValue { state in
            if case .ready(let current) = state.slots[slot], current === connection {
                if let setupFailure {
                    state.slots[slot] = .backingOff(until: .now() + Self.backOff(slot: slot, in: &state), reason: setupFailure)
                } else {
                    state.slots[slot] = .empty
                }
            }
            state.draining[id] = connection
        }
        connection.closeFuture.whenComplete { _ in
            self.state.withLockedValue { _ = $0.draining.removeValue(forKey: id) }
        }
        logger.debug("APNs connection retired", metadata: ["slot": "\(slot)"])
    }

    func shutdown() async {
        let (connections, waiting): ([APNsConnection], [APNsExchange]) = state.withLockedValue { state in
            state.isShutDown = true
            var connections = Array(state.draining.values)
            var waiting: [APNsExchange] = []
            for (index, slot) in state.slots.enumerated() {
                switch slot {
                case .ready(let connection): connections.append(connection)
                case .connecting(let queued): waiting += queued
                case .empty, .backingOff: break
                }
                state.slots[index] = .empty
            }
            return (connections, waiting)
        }
        for exchange in waiting { exchange.complete(.failed(.clientShutdown)) }
        for connection in connections {
            connection.close()
            try? await connection.closeFuture.get()
        }
    }
}
