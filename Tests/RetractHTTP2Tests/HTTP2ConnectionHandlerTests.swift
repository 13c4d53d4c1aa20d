import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import RetractHTTP2

/// One connection's streams, driven frame by frame on NIO's `EmbeddedChannel`:
/// no socket, no TLS, no server; the test plays the server's part.
@Suite("HTTP/2 connection handler")
struct HTTP2ConnectionHandlerTests {
    /// A connection under test, what it told its pool, and how each request ended.
    final class Connection {
        let channel: EmbeddedChannel
        let handler: HTTP2ConnectionHandler
        let events: HTTP2ConnectionHandler.Events
        let established = NIOLockedValueBox(0)
        let streamLimits = NIOLockedValueBox<[Int]>([])
        let retirements = NIOLockedValueBox<[HTTP2TransportError?]>([])
        let outcomes = NIOLockedValueBox<[Int: HTTP2Exchange.Outcome]>([:])

        init() throws {
            let established = established
            let streamLimits = streamLimits
            let retirements = retirements
            events = HTTP2ConnectionHandler.Events(
                established: { established.withLockedValue { $0 += 1 } },
                streamLimit: { limit in streamLimits.withLockedValue { $0.append(limit) } },
                retired: { failure in retirements.withLockedValue { $0.append(failure) } })
            handler = HTTP2ConnectionHandler(events: events)
            channel = EmbeddedChannel(handler: handler)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }

        /// Hands request `number` to the connection, due in `seconds`.
        func submit(_ number: Int, seconds: Int64 = 60) throws {
            let outcomes = outcomes
            let exchange = HTTP2Exchange(
                headers: HPACKHeaders([(":method", "POST"), (":path", "/3/device/\(number)")]),
                body: ByteBuffer(string: #"{"n":\#(number)}"#), deadline: .now() + .seconds(seconds),
                complete: { outcome in outcomes.withLockedValue { $0[number] = outcome } })
            handler.submit(exchange)
            channel.embeddedEventLoop.run()
        }

        /// The server's frame, as it arrives.
        func receive(_ payload: HTTP2Frame.FramePayload, on stream: Int32 = 0) throws {
            try channel.writeInbound(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: payload))
            channel.embeddedEventLoop.run()
        }

        func settings(maximumStreams: Int) throws {
            try receive(.settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: maximumStreams)])))
        }

        /// An answer with `status` and no body.
        func answer(_ stream: Int32, status: Int = 200) throws {
            try receive(.headers(.init(headers: HPACKHeaders([(":status", "\(status)")]), endStream: true)), on: stream)
        }

        /// The streams whose HEADERS went out since the last look, in order.
        func startedStreams() throws -> [Int32] {
            var streams: [Int32] = []
            while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
                if case .headers = frame.payload { streams.append(Int32(frame.streamID)) }
            }
            return streams
        }

        func status(of request: Int) -> Int? {
            guard case .answered(let status, _, _) = outcomes.withLockedValue({ $0[request] }) else { return nil }
            return status
        }

        func wasNotProcessed(_ request: Int) -> Bool {
            guard case .notProcessed = outcomes.withLockedValue({ $0[request] }) else { return false }
            return true
        }

        func failure(of request: Int) -> HTTP2TransportError? {
            guard case .failed(let error) = outcomes.withLockedValue({ $0[request] }) else { return nil }
            return error
        }
    }

    /// Requests wait for the server's SETTINGS, then go out up to its stream
    /// limit; each answer lets the next waiting one start.
    @Test func requestsKeepToTheServersStreamLimit() throws {
        let connection = try Connection()
        for number in 1...3 { try connection.submit(number) }
        #expect(try connection.startedStreams().isEmpty)
        try connection.settings(maximumStreams: 2)
        #expect(connection.established.withLockedValue { $0 } == 1)
        #expect(connection.streamLimits.withLockedValue { $0 } == [2])
        #expect(try connection.startedStreams() == [1, 3])
        try connection.answer(1, status: 200)
        #expect(connection.status(of: 1) == 200)
        #expect(try connection.startedStreams() == [5])
        try connection.answer(3, status: 410)
        try connection.answer(5, status: 400)
        #expect(connection.status(of: 2) == 410)
        #expect(connection.status(of: 3) == 400)
        #expect(connection.retirements.withLockedValue { $0 }.isEmpty)
        #expect(connection.channel.isActive)
    }

    /// A GOAWAY retires the connection: streams above its last stream id
    /// never reached the server and may go elsewhere, those below are
    /// answered, then it closes; a new request is not taken.
    @Test func aGoAwaySendsTheUnprocessedElsewhereAndClosesOnceTheRestAreAnswered() throws {
        let connection = try Connection()
        try connection.settings(maximumStreams: 10)
        for number in 1...3 { try connection.submit(number) }
        #expect(try connection.startedStreams() == [1, 3, 5])
        try connection.receive(.goAway(lastStreamID: HTTP2StreamID(3), errorCode: .noError, opaqueData: nil))
        #expect(connection.wasNotProcessed(3))
        #expect(connection.retirements.withLockedValue { $0.count } == 1)
        #expect(connection.retirements.withLockedValue { $0.first ?? nil } == nil)
        #expect(connection.events.acceptsRequests.withLockedValue { $0 } == false)
        try connection.submit(4)
        #expect(connection.wasNotProcessed(4))
        #expect(try connection.startedStreams().isEmpty)
        try connection.answer(1)
        #expect(connection.channel.isActive)
        try connection.answer(3)
        #expect(connection.status(of: 1) == 200 && connection.status(of: 2) == 200)
        #expect(connection.channel.isActive == false)
    }

    /// A stream reset mid-request: refused means the server never processed
    /// it; any other code that it may have. The connection goes on.
    @Test func aResetStreamFailsThatRequestAloneAndSaysWhetherTheServerHadIt() throws {
        let connection = try Connection()
        try connection.settings(maximumStreams: 1)
        for number in 1...3 { try connection.submit(number) }
        #expect(try connection.startedStreams() == [1])
        try connection.receive(.rstStream(.refusedStream), on: 1)
        #expect(connection.wasNotProcessed(1))
        #expect(try connection.startedStreams() == [3])
        try connection.receive(.rstStream(.internalError), on: 3)
        #expect(connection.failure(of: 2) == .connectionLost)
        #expect(try connection.startedStreams() == [5])
        try connection.answer(5)
        #expect(connection.status(of: 3) == 200)
        #expect(connection.channel.isActive)
    }

    /// Closed before the server's SETTINGS: connecting failed, and the
    /// waiting requests fail with it rather than trying another connection.
    /// The handler keeps the reason once its pipeline is gone: connecting reads
    /// it there when the close came before the connect callback.
    @Test func aConnectionLostBeforeSettingsIsAFailureToConnect() throws {
        let connection = try Connection()
        try connection.submit(1)
        #expect(connection.handler.failureBeforeSetup == nil)
        connection.channel.pipeline.fireErrorCaught(IOError(errnoCode: 104, reason: "read"))
        connection.channel.embeddedEventLoop.run()
        #expect(connection.channel.isActive == false)
        #expect(connection.handler.failureBeforeSetup == connection.failure(of: 1))
        #expect("\(connection.handler.failureBeforeSetup.map { "\($0)" } ?? "")".contains("read"))
        guard case .connectFailed = connection.failure(of: 1) else {
            Issue.record("expected a failure to connect, got \(String(describing: connection.outcomes.withLockedValue { $0[1] }))")
            return
        }
        let retired = connection.retirements.withLockedValue { $0 }
        #expect(retired.count == 1)
        guard case .connectFailed = retired.first ?? nil else {
            Issue.record("the pool was told \(retired)")
            return
        }
    }

    /// An established connection that drops fails what was in flight as
    /// lost (it may have reached the server) and sends the waiting elsewhere.
    @Test func aConnectionLostMidRequestFailsItsStreamsAndFreesItsQueue() throws {
        let connection = try Connection()
        try connection.settings(maximumStreams: 1)
        for number in 1...2 { try connection.submit(number) }
        #expect(try connection.startedStreams() == [1])
        connection.channel.pipeline.fireChannelInactive()
        connection.channel.embeddedEventLoop.run()
        #expect(connection.failure(of: 1) == .connectionLost)
        #expect(connection.wasNotProcessed(2))
        #expect(connection.retirements.withLockedValue { $0.count } == 1)
        #expect(connection.events.acceptsRequests.withLockedValue { $0 } == false)
    }

    /// A stream past its deadline fails as timed out, and the connection
    /// that stopped answering is retired and closed.
    @Test func aStreamPastItsDeadlineTimesOutAndRetiresTheConnection() throws {
        let connection = try Connection()
        try connection.settings(maximumStreams: 10)
        try connection.submit(1, seconds: 0)
        #expect(try connection.startedStreams() == [1])
        connection.channel.embeddedEventLoop.advanceTime(by: HTTP2ConnectionHandler.timeoutSweepInterval)
        #expect(connection.failure(of: 1) == .timedOut)
        #expect(connection.retirements.withLockedValue { $0.count } == 1)
        #expect(connection.channel.isActive == false)
    }
}
