import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import NIOTLS
import RetractAPNs
import SimulatorSupport

/// Answers the streams of one client connection like APNs, on raw frames.
final class SimulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let rules: SimulatorRules
    private let inbox: SimulatorInbox
    private let now: @Sendable () -> Date
    private var authentication = ConnectionAuthentication()
    private var incoming: [HTTP2StreamID: IncomingPush] = [:]
    private var streamsSeen = 0
    /// Set once GOAWAY went out: streams above it are not processed.
    private var lastProcessedStreamID: HTTP2StreamID?
    private var answersPending = 0
    private var flushPending = false
    private let keepsWindowOpen: Bool
    private var sentWindowUpdate = false
    private static let targetInboundWindow = 1 << 20

    init(rules: SimulatorRules, inbox: SimulatorInbox, now: @escaping @Sendable () -> Date) {
        self.rules = rules
        self.inbox = inbox
        self.now = now
        keepsWindowOpen = rules.faults.initialWindowSize > 0
    }

    func channelActive(context: ChannelHandlerContext) {
        inbox.connectionOpened()
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            authentication.hasClientCertificate = (try? context.pipeline.syncOperations.nioSSL_peerCertificate()) != nil
        }
        if let window = event as? NIOHTTP2WindowUpdatedEvent, window.streamID == .rootStream, keepsWindowOpen,
            let inbound = window.inboundWindowSize, inbound < Self.targetInboundWindow / 2
        {
            context.writeAndFlush(
                wrapOutboundOut(
                    HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.targetInboundWindow - inbound))),
                promise: nil
            )
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        switch frame.payload {
        case .headers(let payload):
            if let last = lastProcessedStreamID, streamID > last { return }
            streamsSeen += 1
            incoming[streamID] = IncomingPush(headers: payload.headers, body: nil)
            inbox.openStreams(incoming.count + answersPending)
            if let limit = rules.faults.goAwayAfterStreams, streamsSeen == limit { goAway(context, lastStreamID: streamID) }
            if payload.endStream { received(streamID, context) }
        case .data(let payload):
            guard var push = incoming[streamID] else { return }
            if case .byteBuffer(var bytes) = payload.data {
                if push.body == nil { push.body = bytes } else { push.body!.writeBuffer(&bytes) }
            }
            incoming[streamID] = push
            if payload.endStream { received(streamID, context) }
        case .rstStream:
            incoming[streamID] = nil
        case .settings(.settings):
            if !sentWindowUpdate, keepsWindowOpen {
                sentWindowUpdate = true
                // Open the connection window beyond the 64 KiB default; bodies add up.
                context.writeAndFlush(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.targetInboundWindow - 65_535))
                    ),
                    promise: nil
                )
            }
        default:
            break
        }
    }

    /// Tells the client that streams above `lastStreamID` will not be
    /// processed; the connection closes once the others are answered.
    private func goAway(_ context: ChannelHandlerContext, lastStreamID: HTTP2StreamID) {
        lastProcessedStreamID = lastStreamID
        inbox.goAwaySent()
        let frame = RawFrameWriter.goAway(lastStreamID: Int32(lastStreamID), reason: "Shutdown", allocator: context.channel.allocator)
        if let writer = try? context.pipeline.syncOperations.context(handlerType: RawFrameWriter.self) {
            writer.writeAndFlush(NIOAny(IOData.byteBuffer(frame)), promise: nil)
        }
        closeIfDone(context)
    }

    private func received(_ streamID: HTTP2StreamID, _ context: ChannelHandlerContext) {
        guard let push = incoming.removeValue(forKey: streamID), !rules.faults.unresponsive else { return }
        let at = now()
        let verdict = rules.check(push, authentication: &authentication, now: at) { token in
            FaultDice.roll(seed: rules.faults.seed, token: token, attempt: inbox.nextAttempt(for: token))
        }
        // APNs answers with the request's apns-id as it was written (aioapns, for one, matches
        // answers to requests by the exact text, in lowercase), else one of its own making.
        let echoedID = push.headers.first(name: "apns-id").flatMap { UUID(uuidString: $0) != nil ? $0 : nil }
        switch verdict {
        case .accept(let token, let apnsID):
            if let bearer = push.headers.first(name: "authorization") { inbox.tokenAccepted(bearer) }
            inbox.accepted(APNsReceivedPush(push, apnsID: apnsID, at: at), token: token)
        case .reject(_, let reason, _, _, let explanation):
            inbox.rejected(reason.rawValue, explanation: explanation)
        }
        answersPending += 1
        let latency = rules.faults.latency
        guard latency > .zero else {
            answer(streamID, verdict, echoedID: echoedID, context)
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: latency) {
            let (handler, context) = loopBound.value
            handler.answer(streamID, verdict, echoedID: echoedID, context)
        }
    }

    private func answer(_ streamID: HTTP2StreamID, _ verdict: SimulatorVerdict, echoedID: String?, _ context: ChannelHandlerContext) {
        answersPending -= 1
        switch verdict {
        case .accept(_, let apnsID):
            let headers: HPACKHeaders = [":status": "200", "apns-id": echoedID ?? apnsID.uuidString.lowercased()]
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
        case .reject(let status, let reason, let timestamp, let apnsID, _):
            let headers: HPACKHeaders = [
                ":status": String(status), "apns-id": echoedID ?? apnsID.uuidString.lowercased(), "content-type": "application/json",
            ]
            var body = #"{"reason":"\#(reason.rawValue)""#
            if let timestamp { body += #","timestamp":\#(Int64(timestamp.timeIntervalSince1970 * 1000))"# }
            body += "}"
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: false)))), promise: nil)
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true)))),
                promise: nil
            )
        }
        if !flushPending {
            flushPending = true
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.execute {
                let (handler, context) = loopBound.value
                handler.flushPending = false
                context.flush()
                handler.closeIfDone(context)
            }
        }
    }

    /// After GOAWAY, the connection closes once what it processed is answered.
    private func closeIfDone(_ context: ChannelHandlerContext) {
        guard let last = lastProcessedStreamID, answersPending == 0, !incoming.keys.contains(where: { $0 <= last }) else { return }
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // HTTP/2 errors were answered by NIOHTTP2 already: RST_STREAM for a bad
        // stream, GOAWAY for a bad connection. Anything else ends the connection.
        guard !(error is any NIOHTTP2Error) else { return }
        context.close(promise: nil)
    }
}

extension APNsReceivedPush {
    init(_ push: IncomingPush, apnsID: UUID, at date: Date) {
        var headers: [String: String] = [:]
        for (name, value, _) in push.headers where name != "authorization" { headers[name] = value }
        self.init(apnsID: apnsID, headers: headers, body: push.body.map { Data($0.readableBytesView) } ?? Data(), receivedAt: date)
    }
}
