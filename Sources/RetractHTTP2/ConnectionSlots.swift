import NIOCore

/// What the pool needs to know of a connection: whether it still takes requests.
protocol PooledConnection: AnyObject {
    var acceptsRequests: Bool { get }
}

/// The bookkeeping of ``HTTP2ConnectionPool``: its connection slots (more
/// added as more requests are to be in flight), which one a request goes
/// to, and how long a slot waits after a failed connect. A value driven by events and the time passed in, so it is
/// tested without sockets (the way PostgresNIO tests its pool's state
/// machine); the pool holds it under a lock and does what it answers.
///
/// Requests go round-robin over the slots: a ready slot takes the request, an
/// empty one starts connecting while the request goes to any ready connection
/// (or waits for this one). After a failed connect a slot waits before trying
/// again (1 s, doubling to 30 s): APNs treats rapid reconnecting as abuse.
struct ConnectionSlots<Connection: PooledConnection, Request> {
    enum Slot {
        case empty
        case connecting(waiting: [Request])
        case ready(Connection)
        /// Connecting failed; no new attempt before `until`, and requests
        /// meanwhile fail with `reason`.
        case backingOff(until: NIODeadline, reason: HTTP2TransportError)
    }

    /// Where a request goes.
    enum Route {
        case send(Connection)
        /// Connect `slot`; the request goes to `sendTo` now, or waits for the slot's connection when nil.
        case connect(slot: Int, sendTo: Connection?)
        /// It waits for a connection being made.
        case queued
        case fail(HTTP2TransportError)
    }

    private(set) var slots: [Slot]
    private var failedConnects: [Int]
    private var next = 0
    private(set) var isShutDown = false
    /// Connections that retired but may still be answering, closed at shutdown.
    private var draining: [ObjectIdentifier: Connection] = [:]
    /// How many connections were opened (or started), for tests and metrics.
    private(set) var connectionsOpened = 0
    /// The largest `SETTINGS_MAX_CONCURRENT_STREAMS` a connection was told;
    /// RFC 9113's recommended minimum until one was. The largest: a new
    /// connection told a small first value must not have the pool open
    /// every connection it may.
    private(set) var streamLimit = 100
    private var streamLimitHeard = false

    /// A connection was told the server's stream limit.
    mutating func heard(streamLimit limit: Int) {
        streamLimit = streamLimitHeard ? max(streamLimit, limit) : limit
        streamLimitHeard = true
    }

    init(count: Int) {
        let count = max(count, 1)
        slots = Array(repeating: .empty, count: count)
        failedConnects = Array(repeating: 0, count: count)
    }

    /// Where `request` goes at `now`.
    mutating func route(_ request: Request, now: NIODeadline) -> Route {
        guard !isShutDown else { return .fail(.clientShutdown) }
        let index = next
        next = (next + 1) % slots.count
        // A connection can stop taking requests before its retirement reaches
        // the pool; sending to it would bounce the request straight back here.
        // Its slot is free again (it closes itself once its streams are answered).
        if case .ready(let connection) = slots[index], !connection.acceptsRequests {
            slots[index] = .empty
        }
        switch slots[index] {
        case .ready(let connection):
            return .send(connection)
        case .empty:
            // Fill the slot; the request goes to a ready connection if there is one.
            let ready = anyReady
            slots[index] = .connecting(waiting: ready == nil ? [request] : [])
            connectionsOpened += 1
            return .connect(slot: index, sendTo: ready)
        case .connecting(var waiting):
            if let anyReady { return .send(anyReady) }
            waiting.append(request)
            slots[index] = .connecting(waiting: waiting)
            return .queued
        case .backingOff(let until, let reason):
            if let anyReady { return .send(anyReady) }
            guard now >= until else {
                // Another slot is trying the server again: the request waits for
                // that attempt rather than fail with this slot's older reason. Failing
                // it would split one page between failed and sent devices.
                guard let connecting = anyConnecting, case .connecting(var waiting) = slots[connecting] else { return .fail(reason) }
                waiting.append(request)
                slots[connecting] = .connecting(waiting: waiting)
                return .queued
            }
            slots[index] = .connecting(waiting: [request])
            connectionsOpened += 1
            return .connect(slot: index, sendTo: nil)
        }
    }

    /// Adds empty slots (filled as requests come) until the slots carry
    /// `inFlight` requests at ``streamLimit`` each, at most
    /// `maximumConnections`. Returns the new number of slots, or nil when it
    /// did not change.
    mutating func provision(inFlight: Int, maximumConnections: Int) -> Int? {
        guard !isShutDown else { return nil }
        let wanted = min((inFlight + streamLimit - 1) / max(streamLimit, 1), maximumConnections)
        guard wanted > slots.count else { return nil }
        slots += Array(repeating: .empty, count: wanted - slots.count)
        failedConnects += Array(repeating: 0, count: wanted - failedConnects.count)
        return slots.count
    }

    /// Only needed when the chosen slot is not ready, which is rare once connected.
    private var anyReady: Connection? {
        slots.lazy.compactMap { slot -> Connection? in
            if case .ready(let connection) = slot, connection.acceptsRequests { return connection }
            return nil
        }.first
    }

    /// A slot whose connection is being made, if any.
    private var anyConnecting: Int? {
        slots.firstIndex { slot in
            if case .connecting = slot { return true }
            return false
        }
    }

    /// TCP is connected to `slot`: the requests that waited for it, to give
    /// it; after shutdown, the connection is to be closed and they failed.
    mutating func connected(slot: Int, connection: Connection) -> (waiting: [Request], close: Bool) {
        guard case .connecting(let waiting) = slots[slot] else { return ([], isShutDown) }
        slots[slot] = isShutDown ? .empty : .ready(connection)
        return (waiting, isShutDown)
    }

    /// The server's SETTINGS arrived: connecting worked, the backoff starts over.
    mutating func established(slot: Int) {
        failedConnects[slot] = 0
    }

    /// Connecting `slot` failed at `now`: the requests that waited for it, to
    /// fail, and how long the slot backs off.
    mutating func connectFailed(slot: Int, failure: HTTP2TransportError, now: NIODeadline) -> (waiting: [Request], delay: TimeAmount) {
        let delay = backOff(slot: slot)
        guard case .connecting(let waiting) = slots[slot] else { return ([], delay) }
        slots[slot] = .backingOff(until: now + delay, reason: failure)
        return (waiting, delay)
    }

    /// One more failed connect for `slot`: how long it waits before the next.
    private mutating func backOff(slot: Int) -> TimeAmount {
        failedConnects[slot] += 1
        return .seconds(min(Int64(1) << min(failedConnects[slot] - 1, 5), 30))
    }

    /// `connection` takes no new requests: its slot is refilled on demand,
    /// after the backoff when it closed before it was set up. It is kept
    /// until ``drained(_:)``, to be closed at shutdown.
    mutating func retire(slot: Int, connection: Connection, setupFailure: HTTP2TransportError?, now: NIODeadline) {
        if case .ready(let current) = slots[slot], current === connection {
            if let setupFailure {
                slots[slot] = .backingOff(until: now + backOff(slot: slot), reason: setupFailure)
            } else {
                slots[slot] = .empty
            }
        }
        draining[ObjectIdentifier(connection)] = connection
    }

    /// A retired connection has closed.
    mutating func drained(_ connection: Connection) {
        draining[ObjectIdentifier(connection)] = nil
    }

    /// Stops taking requests: the connections to close and the requests that
    /// waited for a connection, to fail.
    mutating func shutdown() -> (connections: [Connection], waiting: [Request]) {
        isShutDown = true
        var connections = Array(draining.values)
        var waiting: [Request] = []
        for (index, slot) in slots.enumerated() {
            switch slot {
            case .ready(let connection): connections.append(connection)
            case .connecting(let queued): waiting += queued
            case .empty, .backingOff: break
            }
            slots[index] = .empty
        }
        return (connections, waiting)
    }
}

extension ConnectionSlots: Sendable where Connection: Sendable, Request: Sendable {}
extension ConnectionSlots.Slot: Sendable where Connection: Sendable, Request: Sendable {}

extension HTTP2Connection: PooledConnection {}
