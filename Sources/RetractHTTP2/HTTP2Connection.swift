import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One long-lived TLS + HTTP/2 connection to a push service (APNs, FCM).
final class HTTP2Connection: Sendable {
    private let channel: any Channel
    private let handler: NIOLoopBound<HTTP2ConnectionHandler>
    private let events: HTTP2ConnectionHandler.Events

    private init(channel: any Channel, handler: NIOLoopBound<HTTP2ConnectionHandler>, events: HTTP2ConnectionHandler.Events) {
        self.channel = channel
        self.handler = handler
        self.events = events
    }

    /// False once the connection drains or closes: a request sent now would
    /// come straight back as not processed.
    var acceptsRequests: Bool { events.acceptsRequests.withLockedValue { $0 } }

    static func connect(
        host: String,
        port: Int,
        tls: NIOSSLContext,
        on eventLoop: any EventLoop,
        timeout: TimeAmount,
        events: HTTP2ConnectionHandler.Events
    ) -> EventLoopFuture<HTTP2Connection> {
        // SNI carries host names only, never addresses.
        let serverName = host.isIPAddress ? nil : host
        // Each channel's handler, kept here rather than looked up in the pipeline
        // after connecting: a TLS handshake that fails fast (an untrusted
        // certificate, on loopback) can close the channel and empty its pipeline
        // before the connect future's callback runs, and the handler is what
        // knows why. Keyed by channel: a host with several addresses may be
        // tried on several.
        let handlers = NIOLoopBoundBox.makeBoxSendingValue([ObjectIdentifier: HTTP2ConnectionHandler](), eventLoop: eventLoop)
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let settings = [
                        HTTP2Setting(parameter: .enablePush, value: 0),
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                    ]
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.initialSettings = settings
                    // The headers sent are built by our clients and checked by the server; validating
                    // every header block again costs a tenth of the event loop's time.
                    configuration.headerBlockValidation = .disabled
                    let handler = HTTP2ConnectionHandler(events: events)
                    try channel.pipeline.syncOperations.addHandlers([
                        try NIOSSLClientHandler(context: tls, serverHostname: serverName),
                        NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration),
                        handler,
                    ])
                    handlers.value[ObjectIdentifier(channel)] = handler
                }
            }
            .connect(host: host, port: port)
            .flatMapThrowing { channel in
                defer { handlers.value = [:] }
                guard let handler = handlers.value[ObjectIdentifier(channel)] else {
                    channel.close(promise: nil)
                    throw HTTP2TransportError.connectFailed("the connection closed during setup")
                }
                // Closed already: connecting failed, for the reason the handler saw.
                if let failure = handler.failureBeforeSetup { throw failure }
                return HTTP2Connection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop), events: events)
            }
    }

    func submit(_ exchange: HTTP2Exchange) {
        if channel.eventLoop.inEventLoop {
            handler.value.submit(exchange)
        } else {
            channel.eventLoop.execute { self.handler.value.submit(exchange) }
        }
    }

    func close() {
        channel.close(promise: nil)
    }

    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}

extension String {
    fileprivate var isIPAddress: Bool {
        (try? SocketAddress(ipAddress: self, port: 0)) != nil
    }
}
