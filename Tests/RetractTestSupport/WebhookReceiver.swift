import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SimulatorSupport

/// An HTTPS server in this process that takes completion webhooks, with a
/// certificate from a test authority (``caPEM``) for the server to trust.
/// It answers each POST with the next of its scripted statuses, then 200,
/// and keeps what it was sent.
package final class WebhookReceiver: Sendable {
    /// One request it took, as it came.
    package struct Received: Sendable {
        package var method: String
        package var path: String
        /// Names in lowercase.
        package var headers: [String: String]
        package var body: [UInt8]
        package var receivedAt: Date

        package var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    }

    private struct State {
        var answers: [Int]
        var received: [Received] = []
    }

    package let port: Int
    /// The authority that issued its certificate, PEM.
    package let caPEM: String
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    package var url: String { "https://127.0.0.1:\(port)/hooks/retract" }

    /// What it was sent so far, oldest first.
    package var received: [Received] { state.withLockedValue { $0.received } }

    private init(port: Int, caPEM: String, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.caPEM = caPEM
        self.channel = channel
        self.state = state
    }

    /// Runs `body` with a receiver on a free port of 127.0.0.1 that answers
    /// `answers` first, then 200; stopped afterwards.
    package static func with(answers: [Int] = [], _ body: (WebhookReceiver) async throws -> Void) async throws {
        let authority = try SimulatorCertificates.makeAuthority(name: "Retract webhook receiver CA")
        let server = try SimulatorCertificates.issueServerCertificate(from: authority)
        let tls = try NIOSSLContext(
            configuration: TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem))],
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.privateKeyPEM.utf8), format: .pem))))
        let state = NIOLockedValueBox(State(answers: answers))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let receiver = WebhookReceiver(
            port: channel.localAddress?.port ?? 0, caPEM: authority.certificatePEM, channel: channel, state: state)
        do {
            try await body(receiver)
        } catch {
            try? await channel.close()
            throw error
        }
        try? await channel.close()
    }

    /// Waits until it has taken `count` requests, and returns them; throws after `timeout`.
    package func waitForRequests(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let received = self.received
            if received.count >= count { return received }
            guard ContinuousClock.now < deadline else {
                throw HTTPCaller.CallError(
                    description: "the webhook receiver took \(received.count) requests within \(timeout), not \(count)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        private let state: NIOLockedValueBox<State>
        private var head: HTTPRequestHead?
        private var body: [UInt8] = []

        init(state: NIOLockedValueBox<State>) {
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = []
            case .body(let buffer):
                body += buffer.readableBytesView
            case .end:
                guard let head else { return }
                self.head = nil
                var headers: [String: String] = [:]
                for (name, value) in head.headers { headers[name.lowercased()] = value }
                let request = Received(
                    method: head.method.rawValue, path: head.uri, headers: headers, body: body, receivedAt: Date())
                let status = state.withLockedValue { state in
                    state.received.append(request)
                    return state.answers.isEmpty ? 200 : state.answers.removeFirst()
                }
                let answer = HTTPHeaders([("content-length", "0")])
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: answer))),
                    promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
