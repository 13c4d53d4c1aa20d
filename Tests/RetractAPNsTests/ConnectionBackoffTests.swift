import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import RetractAPNs
import Testing

@Suite("Connecting to APNs")
struct ConnectionBackoffTests {
    /// A client of one connection to `server`, which is no APNs.
    static func client(for server: any Channel, requestTimeout: TimeAmount) throws -> APNsClient {
        try APNsClient(
            configuration: APNsClientConfiguration(
                environment: .custom(host: "127.0.0.1", port: server.localAddress?.port ?? 0),
                authentication: .token(key: APNsSigningKey(P256.Signing.PrivateKey()), keyID: Harness.keyID, teamID: Harness.teamID),
                connectionCount: 1, requestTimeout: requestTimeout))
    }

    /// A TCP server that closes every connection it accepts: TCP connects,
    /// TLS never completes. APNs treats rapid reconnecting as abuse, so a
    /// connect counts as working only once the server's SETTINGS arrive.
    @Test func aServerThatFailsEveryTLSHandshakeIsBackedOffFrom() async throws {
        let accepted = NIOLockedValueBox(0)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0 += 1 }
                return channel.close()
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let client = try Self.client(for: server, requestTimeout: .seconds(5))
        var failures: [APNsError] = []
        let stop = ContinuousClock.now + .milliseconds(2500)
        while ContinuousClock.now < stop {
            do {
                _ = try await client.send(Harness.retraction(to: Harness.deviceToken(1)))
                Issue.record("a server that closes every connection accepted a push")
            } catch {
                failures.append(error)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        await client.shutdown()
        try await server.close()
        // One connect at once, the next after 1 s, the next after 2 s more: three at most in 2.5 s.
        #expect((1...3).contains(accepted.withLockedValue { $0 }), "\(accepted.withLockedValue { $0 }) connections in 2.5 s")
        #expect(failures.count > 10)
        for failure in failures {
            guard case .connectFailed = failure else {
                Issue.record("\(failure) is not a failure to connect")
                break
            }
        }
    }

    /// A server that accepts TCP and never answers: the handshake hangs. A
    /// request that never got past it did not reach APNs, so it failed to
    /// connect: not a timeout, which may have reached APNs and is retried.
    @Test func aHandshakeThatHangsIsAFailureToConnect() async throws {
        let held = NIOLockedValueBox<[any Channel]>([])
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                held.withLockedValue { $0.append(channel) }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let client = try Self.client(for: server, requestTimeout: .milliseconds(500))
        let error = await #expect(throws: APNsError.self) { try await client.send(Harness.retraction(to: Harness.deviceToken(1))) }
        if case .connectFailed = error {
        } else {
            Issue.record("\(String(describing: error)) is not a failure to connect")
        }
        await client.shutdown()
        for channel in held.withLockedValue({ $0 }) { try? await channel.close() }
        try await server.close()
    }
}
