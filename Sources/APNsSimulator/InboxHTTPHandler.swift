import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The simulator's plain-HTTP window for other processes:
/// `GET /inbox/<token>` (the pushes a device got, JSON), `GET /screen/<token>`
/// (what its phone displays), `POST /offline/<token>` and `POST /online/<token>`
/// (its phone goes offline or comes back, now), `GET /stats`, `DELETE /inbox`
/// (forget all pushes).
final class InboxHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let inbox: SimulatorInbox
    private let phones: APNsPhoneMix
    private let offline: OfflineDevices
    private let now: @Sendable () -> Date
    private var head: HTTPRequestHead?

    init(inbox: SimulatorInbox, phones: APNsPhoneMix, offline: OfflineDevices, now: @escaping @Sendable () -> Date) {
        self.inbox = inbox
        self.phones = phones
        self.offline = offline
        self.now = now
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
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            guard head.method == .GET, path.hasPrefix("/screen/") else {
                let (status, body) = respond(to: head)
                write(status, body, for: head, context: context)
                return
            }
            // Working out a screen runs RetractKit's code, which is async.
            let token = String(path.dropFirst("/screen/".count))
            let (pushes, phone) = (inbox.pushes(for: token), phones.phone(for: token, offline: offline))
            let answer = context.eventLoop.makePromise(of: ByteBuffer.self)
            answer.completeWithTask { ScreenView(token: token, phone: phone, await APNsSimulatedDevice.replay(pushes, on: phone)).json }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            answer.futureResult.whenSuccess { body in
                let (handler, context) = bound.value
                handler.write(.ok, body, for: head, context: context)
            }
        }
    }

    private func write(_ status: HTTPResponseStatus, _ body: ByteBuffer, for head: HTTPRequestHead, context: ChannelHandlerContext) {
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
            case (.POST, let path) where path.hasPrefix("/offline/"):
                let token = String(path.dropFirst("/offline/".count))
                offline.takeOffline(token, at: now())
                return (.ok, ByteBuffer(data: try encoder.encode(OfflineView(token: token, offline.periods(for: token)))))
            case (.POST, let path) where path.hasPrefix("/online/"):
                let token = String(path.dropFirst("/online/".count))
                offline.bringOnline(token, at: now())
                return (.ok, ByteBuffer(data: try encoder.encode(OfflineView(token: token, offline.periods(for: token)))))
            default:
                return (
                    .notFound,
                    ByteBuffer(
                        string:
                            #"{"error":"not found: GET /inbox/<token>, GET /screen/<token>, POST /offline/<token>, POST /online/<token>, GET /stats, DELETE /inbox"}"#
                    )
                )
            }
        } catch {
            return (.internalServerError, ByteBuffer(string: #"{"error":"cannot encode the answer"}"#))
        }
    }
}

/// What `POST /offline/<token>` and `POST /online/<token>` answer: whether
/// the phone is offline now, and when it was.
struct OfflineView: Encodable {
    var token: String
    var isOffline: Bool
    var offline: [APNsSimulatedDevice.OfflinePeriod]

    init(token: String, _ periods: [APNsSimulatedDevice.OfflinePeriod]) {
        self.token = token.lowercased()
        isOffline = periods.last.map { $0.end == nil } ?? false
        offline = periods
    }
}

/// What `GET /screen/<token>` answers: the phone, what it shows, and the
/// pushes that did not reach its app, by why.
struct ScreenView: Encodable {
    struct Shown: Encodable {
        var identifier: String
        /// What it displays: its body, or what its extension or an edit put there; and its title, if any.
        var text: String
        var title: String?
        var references: [String]
    }

    var token: String
    var phone: APNsSimulatedDevice.Phone
    var showing: [Shown]
    var dropped: Int
    var coalesced: Int
    var storedAndReplaced: Int
    var stored: Int
    /// The apns-ids of the alerts that lit the screen, lowercase, in the order they came.
    var woken: [String]

    init(token: String, phone: APNsSimulatedDevice.Phone, _ screen: APNsSimulatedDevice.Screen) {
        self.token = token.lowercased()
        self.phone = phone
        showing = screen.showing.map { notification in
            Shown(
                identifier: notification.identifier, text: screen.texts[notification.identifier] ?? "",
                title: screen.titles[notification.identifier],
                references: ([notification.referenceID].compactMap { $0 } + notification.referenceIDs).map(\.rawValue))
        }
        dropped = screen.dropped
        coalesced = screen.coalesced
        storedAndReplaced = screen.storedAndReplaced
        stored = screen.stored
        woken = screen.woken.map { $0.uuidString.lowercased() }
    }

    var json: ByteBuffer {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return ByteBuffer(data: (try? encoder.encode(self)) ?? Data("{}".utf8))
    }
}
