import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import RetractAPNs
import RetractKit

/// `retract-bench apns`: sends N retraction pushes through APNsClient to an
/// HTTP/2 endpoint with a fixed number of streams in flight, and prints the rate.
struct APNsBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns",
        abstract: "Send N background pushes through APNsClient and print pushes/s as JSON."
    )

    @Option(help: "The endpoint's host.")
    var host = "127.0.0.1"

    @Option(help: "The endpoint's port.")
    var port: Int

    @Option(help: "A PEM root certificate to trust.")
    var ca: String

    @Option(help: "The .p8 signing key for provider tokens.")
    var key: String

    @Option(help: "Key id of the signing key.")
    var keyID = "BENCHKEY01"

    @Option(help: "Team id of the signing key.")
    var teamID = "BENCHTEAM1"

    @Option(name: .customShort("n"), help: "Pushes to send.")
    var count = 200_000

    @Option(name: .customLong("connections"), help: "HTTP/2 connections.")
    var connections = 1

    @Option(name: .customLong("streams"), help: "Pushes in flight per connection.")
    var streams = 100

    @Option(help: "The topic.")
    var topic = "com.example.bench"

    @Flag(help: "Run the sending tasks on Swift's global executor instead of the connection's event loop.")
    var globalExecutor = false

    func run() async throws {
        let configuration = APNsClientConfiguration(
            environment: .custom(host: host, port: port),
            authentication: .token(key: try APNsSigningKey(contentsOfFile: key), keyID: keyID, teamID: teamID),
            additionalTrustRootsPEM: [try String(contentsOfFile: ca, encoding: .utf8)],
            connectionCount: connections
        )
        // One event loop for the connections and the sending tasks alike.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = try APNsClient(configuration: configuration, eventLoopGroup: group)
        let builder = PayloadBuilder(dialect: .canonical)
        let body = ByteBuffer(bytes: try builder.retractionBodies(for: ["bench-reference"])[0])
        // One warm-up push opens the connections and makes the token.
        _ = try await client.send(request(0, body))

        // Made before the clock starts, as h2load reads its URIs from a file.
        let requests = (0..<count).map { request($0, body) }
        let inFlight = connections * streams
        let start = NIODeadline.now()
        // Task executors need macOS 15; elsewhere (and with --global-executor) the tasks run on Swift's own.
        let failures: Int
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *), !globalExecutor {
            failures = try await Self.send(requests, client: client, inFlight: inFlight, on: EventLoopTaskExecutor(group.next()))
        } else {
            failures = try await Self.send(requests, client: client, inFlight: inFlight)
        }
        let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
        await client.shutdown()
        print(
            #"{"pushes": \#(count), "failures": \#(failures), "seconds": \#(seconds), "pushesPerSecond": \#(Double(count) / seconds), "connections": \#(connections), "streams": \#(streams)}"#
        )
    }

    /// Sends `requests` from `inFlight` tasks, each waiting for its answer before its next push.
    private static func send(_ requests: [APNsRequest], client: APNsClient, inFlight: Int) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { tasks in
            for worker in 0..<inFlight {
                tasks.addTask { await sendShare(of: requests, worker: worker, inFlight: inFlight, client: client) }
            }
            return try await tasks.reduce(0, +)
        }
    }

    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
    private static func send(
        _ requests: [APNsRequest], client: APNsClient, inFlight: Int, on executor: EventLoopTaskExecutor
    ) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { tasks in
            for worker in 0..<inFlight {
                tasks.addTask(executorPreference: executor) {
                    await sendShare(of: requests, worker: worker, inFlight: inFlight, client: client)
                }
            }
            return try await tasks.reduce(0, +)
        }
    }

    /// One task's share: every `inFlight`-th request from `worker` on. Returns the failures.
    private static func sendShare(of requests: [APNsRequest], worker: Int, inFlight: Int, client: APNsClient) async -> Int {
        var failures = 0
        var index = worker
        while index < requests.count {
            do {
                _ = try await client.send(requests[index])
            } catch {
                failures += 1
            }
            index += inFlight
        }
        return failures
    }

    private func request(_ index: Int, _ body: ByteBuffer) -> APNsRequest {
        APNsRequest(deviceToken: Self.token(index), topic: topic, pushType: .background, body: body)
    }

    /// The same tokens h2load is given (scripts/bench writes them with the same format).
    static func token(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }
}
