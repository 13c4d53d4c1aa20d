import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The simulator's plain-HTTP window for other processes:
/// `GET /inbox/<token>` (the pushes a device got, JSON), `GET /stats`,
/// `DELETE /inbox` (forget all pushes).
final class InboxHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let inbox: SimulatorInbox
    private var head: HTTPRequestHead?

    init(inbox: SimulatorInbox) {
        self.inbox = inbox
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            let (status, body) = respond(to: head)
            var headers = HTTPHeaders([("content-type", "application/json"), ("content-length", String(body.readableBytes))])
            if !head.isKeepAlive { headers.add(name: "connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let keepAlive = head.isKeepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }

    private func respond(to head: HTTPRequestHead) -> (HTTPResponseStatus, ByteBuffer) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        do {
            switch (head.method, path) {
            case (.GET, "/stats"):
                return (.ok, ByteBuffer(data: try encoder.encode(inbox.statistics)))
            case (.DELETE, "/inbox"):
                inbox.clear()
                return (.ok, ByteBuffer(string: "{}"))
            case (.GET, let path) where path.hasPrefix("/inbox/"):
                let token = String(path.dropFirst("/inbox/".count))
                return (.ok, ByteBuffer(data: try encoder.encode(inbox.pushes(for: token))))
            default:
                return (.notFound, ByteBuffer(string: #"{"error":"not found: GET /inbox/<token>, GET /stats, DELETE /inbox"}"#))
            }
        } catch {
            return (.internalServerError, ByteBuffer(string: #"{"error":"cannot encode the answer"}"#))
        }
    }
}
