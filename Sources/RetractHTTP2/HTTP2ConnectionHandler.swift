import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Drives the streams of one HTTP/2 connection to a push service directly on frames.
///
/// No child channel per request: each request is a HEADERS and a DATA frame on
/// a new stream id, and the answer is matched back by stream id. It keeps
/// in flight at most the server's `SETTINGS_MAX_CONCURRENT_STREAMS`, queueing
/// the rest; answers the connection's inbound flow-control window; and fails a
/// request once, with the outcome that tells the pool whether it may go to
/// another connection.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// What the connection tells its pool.
    struct Events: Sendable {
        /// The server's first SETTINGS arrived: TLS and HTTP/2 are set up, so
        /// connecting worked.
        var established: @Sendable () -> Void = {}
        /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, each time it says it.
        var streamLimit: @Sendable (Int) -> Void = { _ in }
        /// The connection takes no new requests (GOAWAY, a timeout, closed).
        /// With an error when it closed before it was established: connecting failed.
        var retired: @Sendable (_ setupFailure: HTTP2TransportError?) -> Void
        /// Cleared, from the event loop, when the connection stops taking
        /// requests; the pool reads it from any thread before routing one here.
        var acceptsRequests = NIOLockedValueBox(true)
    }

    private struct InFlight {
        var exchange: HTTP2Exchange
        var status: Int?
        var headers: HPACKHeaders?
        var body: ByteBuffer?

        mutating func receive(_ headers: HPACKHeaders) {
            // Trailers after the answer's headers change nothing.
            guard status == nil else { return }
            status = headers.first(name: ":status").flatMap { Int($0) }
            self.headers = headers
        }

        mutating func receive(_ bytes: ByteBuffer) {
            if body == nil {
                body = bytes
            } else {
                var bytes = bytes
                body!.writeBuffer(&bytes)
            }
        }
    }

    private enum State {
        case open
        /// No new streams; closes once the streams in flight are answered.
        case draining
        case closed
    }

    private let events: Events
    private var context: ChannelHandlerContext?
    private var state = State.open
    private var nextStreamID = HTTP2StreamID(1)
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var waiting = CircularBuffer<HTTP2Exchange>()
    /// Until the server's first SETTINGS arrive, RFC 9113's recommended minimum.
    private var maximumConcurrentStreams = 100
    private var flushPending = false
    private var unflushed = 0
    private var timeoutSweep: RepeatedTask?
    /// Whether the server's SETTINGS arrived. Requests wait for them, to
    /// respect the server's stream and window limits from the first stream;
    /// a failure before them is a failure to connect.
    private var isEstablished = false
    private var lastError: (any Error)?
    /// Why the connection closed before the server's SETTINGS arrived, once it has.
    private(set) var failureBeforeSetup: HTTP2TransportError?

    /// The inbound connection window this side keeps open.
    private static let targetInboundWindow = 1 << 20
    /// Stream ids are 31 bits; a connection that nears the end drains and is replaced.
    private static let lastUsableStreamID = HTTP2StreamID(Int32.max - 1_000)
    static let timeoutSweepInterval = TimeAmount.milliseconds(100)
    /// Requests written before a flush goes out without waiting for the tick to end.
    static let flushBatch = 16

    init(events: Events) {
        self.events = events
    }

    // MARK: - Requests from the pool

    /// Runs on the event loop.
    func submit(_ exchange: HTTP2Exchange) {
        guard case .open = state else {
            exchange.complete(.notProcessed)
            return
        }
        if isEstablished, inFlight.count < maximumConcurrentStreams {
            start(exchange)
        } else {
            waiting.append(exchange)
        }
    }

    private func start(_ exchange: HTTP2Exchange) {
        guard let context else {
            exchange.complete(.notProcessed)
            return
        }
        let streamID = nextStreamID
        nextStreamID = HTTP2StreamID(Int32(streamID) + 2)
        inFlight[streamID] = InFlight(exchange: exchange)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: exchange.headers, endStream: false)))),
            promise: nil
        )
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(exchange.body), endStream: true)))),
            promise: nil
        )
        unflushed += 1
        if unflushed >= Self.flushBatch {
            // Send early so the server works while the rest are being written.
            unflushed = 0
            context.flush()
        } else {
            scheduleFlush(context)
        }
        if streamID >= Self.lastUsableStreamID { retire(context) }
    }

    /// One flush per event-loop tick, however many requests were written in it.
    private func scheduleFlush(_ context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            loopBound.value.flushPending = false
            loopBound.value.unflushed = 0
            loopBound.value.context?.flush()
        }
    }

    private func startWaiting() {
        while case .open = state, isEstablished, inFlight.count < maximumConcurrentStreams, let next = waiting.popFirst() {
            start(next)
        }
    }

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The task holds the handler until close() cancels it.
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timeoutSweep = context.eventLoop.scheduleRepeatedTask(
            initialDelay: Self.timeoutSweepInterval,
            delay: Self.timeoutSweepInterval
        ) { _ in
            loopBound.value.failExpired()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        close(failingInFlightWith: .connectionLost)
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        close(failingInFlightWith: .connectionLost)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            finish(streamError.streamID, with: .failed(.connectionLost))
            return
        }
        lastError = error
        // A connection-level error: nothing more can be trusted on this connection.
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let payload):
            // Changed in place: copying an entry out and back costs retains per frame.
            inFlight[frame.streamID]?.receive(payload.headers)
            if payload.endStream { finishAnswered(frame.streamID) }
        case .data(let payload):
            if case .byteBuffer(let bytes) = payload.data { inFlight[frame.streamID]?.receive(bytes) }
            if payload.endStream { finishAnswered(frame.streamID) }
        case .rstStream(let code):
            finish(frame.streamID, with: code == .refusedStream ? .notProcessed : .failed(.connectionLost))
        case .goAway(let lastStreamID, _, _):
            // Draining first, so that finishing streams starts no new ones here.
            retire(context)
            // Streams above the last one the server will process never reached it.
            for streamID in inFlight.keys where streamID > lastStreamID {
                finish(streamID, with: .notProcessed)
            }
        case .settings(.settings(let settings)):
            if !isEstablished {
                isEstablished = true
                events.established()
                // Open the connection window beyond the 64 KiB default; error bodies add up.
                context.writeAndFlush(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.targetInboundWindow - 65_535))
                    ),
                    promise: nil
                )
            }
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                maximumConcurrentStreams = max(setting.value, 1)
                events.streamLimit(maximumConcurrentStreams)
            }
            startWaiting()
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            // Normally answered already; otherwise the stream ended without an answer.
            finish(closed.streamID, with: closed.reason == .refusedStream ? .notProcessed : .failed(.connectionLost))
        case let window as NIOHTTP2WindowUpdatedEvent where window.streamID == .rootStream:
            if let inbound = window.inboundWindowSize, inbound < Self.targetInboundWindow / 2 {
                context.writeAndFlush(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.targetInboundWindow - inbound))
                    ),
                    promise: nil
                )
            }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    // MARK: - Completion

    private func finishAnswered(_ streamID: HTTP2StreamID) {
        guard let exchange = inFlight[streamID] else { return }
        guard let status = exchange.status, let headers = exchange.headers else {
            finish(streamID, with: .failed(.connectionLost))
            return
        }
        finish(streamID, with: .answered(status: status, headers: headers, body: exchange.body))
    }

    private func finish(_ streamID: HTTP2StreamID, with outcome: HTTP2Exchange.Outcome) {
        guard let exchange = inFlight.removeValue(forKey: streamID) else { return }
        exchange.exchange.complete(outcome)
        switch state {
        case .open:
            startWaiting()
        case .draining:
            if inFlight.isEmpty { context?.close(promise: nil) }
        case .closed:
            break
        }
    }

    /// Takes no new requests: those waiting go elsewhere, those in flight finish.
    private func retire(_ context: ChannelHandlerContext) {
        guard case .open = state else { return }
        state = .draining
        // The pool first, so that it never sees this connection refuse requests while its slot still holds it.
        events.retired(isEstablished ? nil : .connectFailed("no answer while setting up the connection"))
        events.acceptsRequests.withLockedValue { $0 = false }
        while let exchange = waiting.popFirst() { exchange.complete(.notProcessed) }
        if inFlight.isEmpty { context.close(promise: nil) }
    }

    private func close(failingInFlightWith connectionError: HTTP2TransportError) {
        if case .closed = state { return }
        let error = isEstablished ? connectionError : Self.setupFailure(lastError)
        if !isEstablished { failureBeforeSetup = error }
        if case .open = state { events.retired(isEstablished ? nil : error) }
        events.acceptsRequests.withLockedValue { $0 = false }
        state = .closed
        timeoutSweep?.cancel()
        timeoutSweep = nil
        let failed = inFlight
        inFlight = [:]
        for exchange in failed.values { exchange.exchange.complete(.failed(error)) }
        // Another connection may take the waiting ones, unless connecting is what fails.
        while let exchange = waiting.popFirst() { exchange.complete(isEstablished ? .notProcessed : .failed(error)) }
    }

    /// Why a connection closed before it was set up: a TLS alert about this
    /// side's certificate means the server refused the client certificate
    /// (no later connection will do better), anything else that connecting failed.
    static func setupFailure(_ error: (any Error)?) -> HTTP2TransportError {
        guard let error else { return .connectFailed("the connection closed during setup") }
        let text = "\(error)"
        if let alert = refusedCertificateAlerts.first(where: { text.contains($0) }) {
            return .clientCertificateRefused("TLS alert \(alert)")
        }
        return .connectFailed(text)
    }

    /// Alerts a server sends when it refuses the client's certificate, as
    /// BoringSSL names a received alert.
    static let refusedCertificateAlerts = [
        "ALERT_BAD_CERTIFICATE", "ALERT_CERTIFICATE_REVOKED", "ALERT_CERTIFICATE_EXPIRED", "ALERT_CERTIFICATE_UNKNOWN",
        "ALERT_UNSUPPORTED_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_REQUIRED", "ALERT_ACCESS_DENIED",
    ]

    /// A request past its deadline fails as timed out. One that was sent means
    /// the server stopped answering (or stopped granting window), and one still
    /// waiting for the server's SETTINGS means it never finished setting up:
    /// either way the connection is retired before anyone hears of the timeout,
    /// so a retry cannot land on it, and closed so the pool replaces it.
    private func failExpired() {
        let now = NIODeadline.now()
        let expiredStreams = inFlight.filter { $0.value.exchange.deadline <= now }
        let expiredWaiting = waiting.filter { $0.deadline <= now }
        guard !expiredStreams.isEmpty || !expiredWaiting.isEmpty else { return }
        for streamID in expiredStreams.keys { inFlight[streamID] = nil }
        waiting.removeAll { $0.deadline <= now }
        let unresponsive = !expiredStreams.isEmpty || !isEstablished
        if unresponsive, let context { retire(context) }
        for exchange in expiredStreams.values { exchange.exchange.complete(.failed(.timedOut)) }
        // Still waiting for the server's SETTINGS: they never reached it, and connecting is what failed.
        let waitingOutcome: HTTP2Exchange.Outcome =
            isEstablished ? .failed(.timedOut) : .failed(.connectFailed("no answer while setting up the connection"))
        for exchange in expiredWaiting { exchange.complete(waitingOutcome) }
        if unresponsive { context?.close(promise: nil) }
    }
}
