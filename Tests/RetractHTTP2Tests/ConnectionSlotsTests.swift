import NIOCore
import Testing

@testable import RetractHTTP2

/// The pool's routing and backoff, driven by events and a clock of the test's own.
@Suite("Connection slots")
struct ConnectionSlotsTests {
    final class Connection: PooledConnection {
        var acceptsRequests = true
    }

    typealias Slots = ConnectionSlots<Connection, Int>
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    @Test func theFirstRequestsConnectAndWaitThenGoRoundRobin() {
        var slots = Slots(count: 2)
        guard case .connect(0, nil) = slots.route(1, now: Self.start) else {
            Issue.record("slot 0 not connected")
            return
        }
        // Slot 1 connects too; with nothing ready, its request waits for it.
        guard case .connect(1, nil) = slots.route(2, now: Self.start) else {
            Issue.record("slot 1 not connected")
            return
        }
        guard case .queued = slots.route(3, now: Self.start) else {
            Issue.record("request 3 not queued")
            return
        }
        let (a, b) = (Connection(), Connection())
        #expect(slots.connected(slot: 0, connection: a).waiting == [1, 3])
        #expect(slots.connected(slot: 1, connection: b).waiting == [2])
        var targets: [ObjectIdentifier] = []
        for request in 4..<8 {
            guard case .send(let connection) = slots.route(request, now: Self.start) else {
                Issue.record("\(request) not sent")
                return
            }
            targets.append(ObjectIdentifier(connection))
        }
        // Three requests went before: the next slot is 1.
        #expect(targets == [b, a, b, a].map(ObjectIdentifier.init))
        #expect(slots.connectionsOpened == 2)
    }

    @Test func aFailedConnectFailsItsWaitersAndBacksOffDoubling() {
        var slots = Slots(count: 1)
        _ = slots.route(1, now: Self.start)
        let failed = slots.connectFailed(slot: 0, failure: .connectFailed("refused"), now: Self.start)
        #expect(failed.waiting == [1] && failed.delay == .seconds(1))
        // Within the backoff, requests fail at once with the reason, without a connect.
        guard case .fail(.connectFailed("refused")) = slots.route(2, now: Self.start + .milliseconds(999)) else {
            Issue.record("not failed during the backoff")
            return
        }
        guard case .connect(0, nil) = slots.route(3, now: Self.start + .seconds(1)) else {
            Issue.record("no reconnect")
            return
        }
        #expect(slots.connectFailed(slot: 0, failure: .connectFailed("refused"), now: Self.start + .seconds(1)).delay == .seconds(2))
        for expected: Int64 in [4, 8, 16, 30, 30] {
            let now = Self.start + .seconds(100 * expected)
            _ = slots.route(0, now: now)
            #expect(slots.connectFailed(slot: 0, failure: .connectFailed("refused"), now: now).delay == .seconds(expected))
        }
        // The server's SETTINGS start the backoff over.
        _ = slots.route(0, now: Self.start + .seconds(10_000))
        _ = slots.connected(slot: 0, connection: Connection())
        slots.established(slot: 0)
        guard case .ready(let connection) = slots.slots[0] else {
            Issue.record("not ready")
            return
        }
        slots.retire(slot: 0, connection: connection, setupFailure: .connectionLost, now: Self.start + .seconds(10_000))
        guard case .backingOff(let until, _) = slots.slots[0] else {
            Issue.record("not backing off")
            return
        }
        #expect(until == Self.start + .seconds(10_001))
    }

    /// After an outage one slot tries the server again while the other still
    /// backs off: the requests wait for that attempt, all of them, rather than
    /// every other one failing with the old reason (which split a page between
    /// devices sent and devices sent again later).
    @Test func whileOneSlotTriesAgainTheRequestsWaitForItInsteadOfFailing() {
        var slots = Slots(count: 2)
        _ = slots.route(1, now: Self.start)
        _ = slots.route(2, now: Self.start)
        _ = slots.connectFailed(slot: 0, failure: .connectFailed("refused"), now: Self.start)
        _ = slots.connectFailed(slot: 1, failure: .connectFailed("refused"), now: Self.start + .milliseconds(500))
        // Slot 0's backoff is over, slot 1's is not.
        let now = Self.start + .milliseconds(1_200)
        guard case .connect(0, nil) = slots.route(3, now: now) else {
            Issue.record("slot 0 did not try again")
            return
        }
        for request in 4..<8 {
            guard case .queued = slots.route(request, now: now) else {
                Issue.record("request \(request) not queued behind slot 0's attempt")
                return
            }
        }
        #expect(slots.connected(slot: 0, connection: Connection()).waiting == [3, 4, 5, 6, 7])
        // With nothing trying, a slot backing off still fails fast.
        var alone = Slots(count: 1)
        _ = alone.route(1, now: Self.start)
        _ = alone.connectFailed(slot: 0, failure: .connectFailed("refused"), now: Self.start)
        guard case .fail(.connectFailed("refused")) = alone.route(2, now: Self.start + .milliseconds(10)) else {
            Issue.record("not failed fast")
            return
        }
    }

    @Test func aConnectionThatStoppedTakingRequestsIsPassedOverAndRefilled() {
        var slots = Slots(count: 2)
        _ = slots.route(1, now: Self.start)
        _ = slots.route(2, now: Self.start)
        let (a, b) = (Connection(), Connection())
        _ = slots.connected(slot: 0, connection: a)
        _ = slots.connected(slot: 1, connection: b)
        a.acceptsRequests = false
        // Slot 0 is next: it is emptied and refilled while the request goes to b.
        guard case .connect(0, let sendTo?) = slots.route(3, now: Self.start), sendTo === b else {
            Issue.record("not refilled")
            return
        }
        #expect(slots.connectionsOpened == 3)
    }

    @Test func shutdownHandsBackConnectionsAndWaitersAndRefusesTheRest() {
        var slots = Slots(count: 2)
        _ = slots.route(1, now: Self.start)
        _ = slots.route(2, now: Self.start)
        let a = Connection()
        _ = slots.connected(slot: 0, connection: a)
        let retired = Connection()
        slots.retire(slot: 1, connection: retired, setupFailure: nil, now: Self.start)
        let (connections, waiting) = slots.shutdown()
        #expect(Set(connections.map(ObjectIdentifier.init)) == Set([a, retired].map(ObjectIdentifier.init)))
        #expect(waiting == [2])
        guard case .fail(.clientShutdown) = slots.route(3, now: Self.start) else {
            Issue.record("not refused")
            return
        }
        // A connect that completes after shutdown is closed, its waiters failed.
        #expect(slots.connected(slot: 1, connection: Connection()).close)
    }
}

extension ConnectionSlotsTests {
    @Test func provisioningAddsSlotsAtTheServersStreamLimitUpToTheCap() {
        var slots = Slots(count: 2)
        // RFC 9113's 100 streams until a server says otherwise.
        #expect(slots.provision(inFlight: 150, maximumConnections: 8) == nil)
        #expect(slots.provision(inFlight: 250, maximumConnections: 8) == 3)
        slots.heard(streamLimit: 1000)
        // A connection told less at first does not make the pool open more.
        slots.heard(streamLimit: 1)
        #expect(slots.streamLimit == 1000)
        #expect(slots.provision(inFlight: 2000, maximumConnections: 8) == nil)
        #expect(slots.provision(inFlight: 4800, maximumConnections: 8) == 5)
        #expect(slots.provision(inFlight: 100_000, maximumConnections: 8) == 8)
        // Fewer wanted: none closed.
        #expect(slots.provision(inFlight: 10, maximumConnections: 8) == nil)
        #expect(slots.slots.count == 8)
        // The new slots connect as requests come.
        var connected = 0
        for request in 0..<8 {
            if case .connect = slots.route(request, now: Self.start) { connected += 1 }
        }
        #expect(connected == 8)
        _ = slots.shutdown()
        #expect(slots.provision(inFlight: 100_000, maximumConnections: 16) == nil)
    }
}
