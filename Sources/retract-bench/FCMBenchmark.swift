import ArgumentParser
import FCMSimulator
import Foundation
import NIOCore
import RetractAPNs
import RetractCore
import RetractFCM
import RetractKit
import RetractModel
import RetractStore

/// `retract-bench fcm-simulator`: the FCM simulator as its own process, with
/// a service account it trusts written to `--out`.
struct FCMSimulatorProcess: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm-simulator",
        abstract: "Run the FCM simulator (no inbox) and write service-account.json and fcm-ca.pem to --out."
    )

    @Option(help: "The port on 127.0.0.1.")
    var port: Int

    @Option(help: "Where to write the service account and the simulator's CA.")
    var out: String

    func run() async throws {
        var account = try FCMSimulator.makeServiceAccount(projectID: "retract-bench")
        let simulator = try await FCMSimulator.start(FCMSimulatorConfiguration(port: port, accounts: [.init(account)], recordsInbox: false))
        account.tokenURI = simulator.tokenURI
        let folder = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try account.json().write(to: folder.appendingPathComponent("service-account.json"))
        try Data(simulator.certificateAuthorityPEM.utf8).write(to: folder.appendingPathComponent("fcm-ca.pem"))
        print("fcm simulator listening on \(simulator.baseURL)")
        await simulator.waitUntilStopped()
    }
}

/// `retract-bench fcm-client`: FCMClient alone sending N messages with a
/// window to any `messages:send` endpoint (the simulator, or a neutral
/// HTTP/2 sink next to h2load), its access token from the service account's
/// token endpoint.
struct FCMClientBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm-client",
        abstract: "FCMClient alone sending N messages with a window; prints the rate as JSON."
    )

    @Option(help: "The base URL of messages:send.")
    var baseURL: String

    @Option(help: "A PEM root certificate to trust (the sink's and the token endpoint's).")
    var ca: [String] = []

    @Option(help: "The service account's JSON file (its token_uri is used).")
    var serviceAccount: String

    @Option(name: .customShort("n"), help: "Messages.")
    var count = 100_000

    @Option(help: "Messages in flight.")
    var window = 400

    @Option(help: "Write the first message's request body here and send nothing (h2load's body).")
    var writeBody: String?

    func run() async throws {
        let message = try FCMBenchmark.message(for: ReferenceID("bench-reference"))
        if let writeBody {
            let body = message.request(token: PushService.fcm.text(of: FCMBenchmark.token(0)))
            try Data(body.readableBytesView).write(to: URL(fileURLWithPath: writeBody))
            return
        }
        let roots = try ca.map { try String(contentsOfFile: $0, encoding: .utf8) }
        let client = try FCMClient(
            account: try FCMServiceAccount(contentsOfFile: serviceAccount),
            configuration: FCMClientConfiguration(messagesBaseURL: baseURL, additionalTrustRootsPEM: roots))
        let tokens = (0..<count).map(FCMBenchmark.token)
        let seconds = try await FCMBenchmark.timeClientAlone(client, message: message, tokens: tokens, window: window)
        await client.shutdown()
        print(#"{"messages": \#(count), "window": \#(window), "clientSeconds": \#(seconds), "clientPerSecond": \#(Double(count) / seconds)}"#)
    }
}

/// `retract-bench fcm`: a retraction of N devices recorded as FCM devices,
/// worked to the end by RetractCore against the FCM simulator, next to
/// FCMClient alone sending the same N messages with the same window to the
/// same simulator: the ratio is what the engine costs on top of FCM.
struct FCMBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "A retraction of N FCM devices through RetractCore next to FCMClient alone; prints both rates as JSON."
    )

    @Option(help: "The benchmark's database (migrated here).")
    var databaseURL: String

    @Option(help: "The FCM simulator's base URL.")
    var baseURL: String

    @Option(help: "A PEM root certificate to trust.")
    var ca: String

    @Option(help: "The service account's JSON file.")
    var serviceAccount: String

    @Option(name: .customShort("n"), help: "Devices.")
    var count = 20_000

    @Option(help: "Messages in flight.")
    var window = EngineSettings().window

    func run() async throws {
        let url = try DatabaseURL(databaseURL)
        let reference = ReferenceID("bench-fcm-\(UUID().uuidString.prefix(8))")
        let fcm = FCMSettings(messagesBaseURL: baseURL, additionalTrustRootsPEM: [try String(contentsOfFile: ca, encoding: .utf8)])
        try await RetractStore.withStore(url: url, maximumConnections: 8, logger: benchmarkLogger) { store in
            try await MigrationRunner().migrate(store)
            let app = try await store.registerApp(
                AppRegistration(
                    name: "bench-\(UUID().uuidString.prefix(8).lowercased())", topic: "com.example.bench", environment: .sandbox,
                    authentication: .fcmOnly, fcmServiceAccountPath: URL(fileURLWithPath: serviceAccount).path),
                actor: "bench")
            let tokens = (0..<count).map(Self.token)
            for start in stride(from: 0, to: count, by: 10_000) {
                _ = try await store.record(
                    tokens[start..<min(start + 10_000, count)].map {
                        Delivery(appID: app.id, reference: reference, token: $0, sentAt: Date(), transport: .fcm)
                    })
            }

            // The client alone: the same messages, the same window, no ledger.
            let client = try FCMClient(
                account: try FCMServiceAccount(contentsOfFile: serviceAccount), configuration: fcm.clientConfiguration)
            let message = try Self.message(for: reference)
            // As many connections as the engine's window opens.
            client.provision(inFlight: window)
            let clientSeconds = try await Self.timeClientAlone(client, message: message, tokens: tokens, window: window)
            await client.shutdown()

            // The engine: a retraction worked to the end by one worker.
            let transports = PushTransports(fcm: fcm, logger: benchmarkLogger)
            let engine = RetractEngine(
                store: store, transports: transports, settings: EngineSettings(window: window), logger: benchmarkLogger)
            let engineSeconds = try await Timing.retraction(of: reference, app: app, count: count, engine: engine)
            await transports.shutdown()
            print(
                #"{"devices": \#(count), "window": \#(window), "engineSeconds": \#(engineSeconds), "enginePerSecond": \#(Double(count) / engineSeconds), "clientSeconds": \#(clientSeconds), "clientPerSecond": \#(Double(count) / clientSeconds)}"#
            )
        }
    }

    /// A background retraction message for one reference, as the engine sends it.
    static func message(for reference: ReferenceID) throws -> FCMMessage {
        try FCMMessage(body: try PayloadBuilder().retractionBodies(for: [reference])[0], kind: .background)
    }

    /// An FCM registration token of the usual length (163 characters), different for each index.
    static func token(_ index: Int) -> DeviceToken {
        let id = String(format: "%010d", index)
        return DeviceToken(bytes: Array("bench\(id)fcm01234567:APA91b\(String(repeating: "bEnCh_", count: 22))\(id)".utf8))
    }

    static func timeClientAlone(_ client: FCMClient, message: FCMMessage, tokens: [DeviceToken], window: Int) async throws -> Double
    {
        // The requests are made before the clock starts, as h2load reads its body from a file.
        let requests = tokens.map { message.request(token: PushService.fcm.text(of: $0)) }
        // The access token and the connection first, as the engine's first page has them by its second.
        try await client.send(requests[0])
        return try await Timing.inLanes(count: requests.count, window: window) { index in
            try await client.send(requests[index])
        }
    }
}
