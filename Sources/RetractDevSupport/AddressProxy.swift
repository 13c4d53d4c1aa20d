import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The one address the application reaches PostgreSQL by, as a DNS name or a
/// virtual IP is in production: a TCP proxy on 127.0.0.1 that forwards each
/// connection to the server it currently points at. A failover moves it
/// (``move(to:)``): the connections to the old server are cut, as a dead
/// primary's are, and new ones reach the new server.
package final class AddressProxy: Sendable {
    package let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let listener: any Channel
    private let state: NIOLockedValueBox<State>

    private struct State {
        /// Where new connections go; nil: nowhere (refused).
        var target: Int?
        var connections: [ObjectIdentifier: any Channel] = [:]
    }

    /// Listens on a free port, forwarding to `target`.
    package init(target: Int) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = NIOLockedValueBox(State(target: target))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                guard let target = state.withLockedValue({ $0.target }) else { return inbound.close() }
                return ClientBootstrap(group: inbound.eventLoop).connect(host: "127.0.0.1", port: target).flatMapThrowing { outbound in
                    let (one, other) = GlueHandler.matchedPair()
                    try inbound.pipeline.syncOperations.addHandler(one)
                    try outbound.pipeline.syncOperations.addHandler(other)
                    state.withLockedValue { state in
                        state.connections[ObjectIdentifier(inbound)] = inbound
                        state.connections[ObjectIdentifier(outbound)] = outbound
                    }
                    for channel in [inbound, outbound] {
                        channel.closeFuture.whenComplete { _ in
                            _ = state.withLockedValue { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
                        }
                    }
                }
            }
        do {
            listener = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        port = listener.localAddress?.port ?? 0
        self.group = group
        self.state = state
    }

    /// Points new connections at `target` (nil: refuses them) and cuts every
    /// connection made before.
    package func move(to target: Int?) {
        let open = state.withLockedValue { state in
            state.target = target
            return Array(state.connections.values)
        }
        for channel in open { channel.close(promise: nil) }
    }

    package func close() async {
        move(to: nil)
        try? await listener.close()
        try? await group.shutdownGracefully()
    }
}

/// Joins two channels on one event loop: what one reads, the other writes,
/// reading only as fast as its partner can write (each channel reads on its
/// own, and its reads wait here while the partner cannot take more); a close
/// of one closes both. The accepted channel is registered, and reads, only
/// once both handlers are in place.
private final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func matchedPair() -> (GlueHandler, GlueHandler) {
        let (one, other) = (GlueHandler(), GlueHandler())
        one.partner = other
        other.partner = one
        return (one, other)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    private var isWritable: Bool { context?.channel.isWritable ?? false }

    private func partnerWrite(_ data: NIOAny) { context?.write(data, promise: nil) }
    private func partnerFlush() { context?.flush() }
    private func partnerClose() { context?.close(promise: nil) }

    private func partnerBecameWritable() {
        guard pendingRead else { return }
        pendingRead = false
        context?.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { partner?.partnerWrite(data) }
    func channelReadComplete(context: ChannelHandlerContext) { partner?.partnerFlush() }
    func channelInactive(context: ChannelHandlerContext) { partner?.partnerClose() }
    func errorCaught(context: ChannelHandlerContext, error: any Error) { partner?.partnerClose() }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
    }

    func read(context: ChannelHandlerContext) {
        if partner?.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }
}
