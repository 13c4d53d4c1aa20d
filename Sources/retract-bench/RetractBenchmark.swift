import ArgumentParser
import Foundation
import NIOCore
import PostgresNIO
import RetractAPNs
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// `retract-bench retract`: a retraction of N recorded devices through the
/// engine (ledger pages, work queue, APNs client) to an APNs endpoint, next
/// to the APNs client alone sending the same N pushes with the same window
/// to the same endpoint: the ratio is what the engine costs on top of APNs.
struct RetractBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retract",
        abstract: "A retraction of N devices through RetractCore next to APNsClient alone; prints both rates as JSON."
    )

    @Option(help: "The benchmark's database (migrated here).")
    var databaseURL: String

    @Option(help: "The APNs endpoint's port on 127.0.0.1 (the simulator).")
    var port: Int

    @Option(help: "A PEM root certificate to trust.")
    var ca: String

    @Option(help: "The .p8 signing key the endpoint accepts (key id BENCHKEY01, team BENCHTEAM1).")
    var key: String

    @Option(name: .customShort("n"), help: "Devices.")
    var count = 100_000

    // 400 and 2: the fixed window and connections this benchmark has always
    // compared at, now the engine's caps here; `scripts/bench rtt` measures the self-sizing defaults.
    @Option(help: "Pushes in flight: the engine's cap, and the client's window (default 400).")
    var window = 400

    @Option(help: "HTTP/2 connections: the engine's cap, and the client's (default 2).")
    var connections = 2

    @Flag(help: "Only register an app and record the devices; print the app and reference as JSON (for `retract notification`).")
    var recordOnly = false

    @Flag(
        help: "Instead of the client alone, time a service-extension retraction of the same devices next to a background one.")
    var compareModes = false

    @Flag(
        name: .customLong("collapse-ids"),
        help: """
            Record each delivery with the reference as its collapse id, as `retract send` records it: \
            the alert modes then look for newer messages under each device's collapse id before sending.
            """)
    var collapseIDs = false

    @Flag(
        help: """
            Record every delivery with a campaign label too, and instead of the client alone, time a retraction by that \
            campaign next to one by the reference, of the same deliveries.
            """)
    var compareCampaign = false

    @Flag(
        help: """
            Instead of the client alone, time a retraction whose devices each had 20 references retracted in the last \
            hour (which ride along in every push) next to one of the same tokens in another app, without any; the \
            ledger holds the day partitions of a month's retention.
            """)
    var compareHistory = false

    @Flag(
        help: """
            With --compare-history: vacuum and analyze the ledger's tables once the devices are recorded, as autovacuum \
            has done by the time a day-old message is retracted; without it, the day's deliveries are as fresh as a bulk load.
            """)
    var vacuumed = false

    /// Earlier retractions per device in `--compare-history`.
    static let historyLength = 20

    func validate() throws {
        if vacuumed && !compareHistory { throw ValidationError("--vacuumed goes with --compare-history") }
    }

    func run() async throws {
        let url = try DatabaseURL(databaseURL)
        let reference = ReferenceID("bench-retraction-\(UUID().uuidString.prefix(8))")
        let campaign = "bench-campaign-\(UUID().uuidString.prefix(8))"
        try await RetractStore.withStore(url: url, maximumConnections: 8, logger: benchmarkLogger) { store in
            try await MigrationRunner().migrate(store)
            let app = try await store.registerApp(
                AppRegistration(
                    name: "bench-\(UUID().uuidString.prefix(8).lowercased())", topic: "com.example.bench", environment: .sandbox,
                    endpoint: "https://127.0.0.1:\(port)",
                    authentication: .token(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", keyPath: URL(fileURLWithPath: key).path)),
                actor: "bench")
            let tokens = (0..<count).map { APNsBenchmark.token($0) }.map { DeviceToken(hex: $0)! }
            for start in stride(from: 0, to: count, by: 10_000) {
                _ = try await store.record(
                    tokens[start..<min(start + 10_000, count)].map {
                        Delivery(
                            appID: app.id, reference: reference, token: $0, sentAt: Date(),
                            collapseID: collapseIDs ? reference.rawValue : nil,
                            labels: DeliveryLabels(campaign: compareCampaign ? campaign : nil))
                    })
            }
            if recordOnly {
                print(#"{"app": "\#(app.name)", "reference": "\#(reference)", "campaign": "\#(campaign)", "devices": \#(count)}"#)
                return
            }
            let trust = [try String(contentsOfFile: ca, encoding: .utf8)]
            // An engine sending to the endpoint with the window and connections asked for.
            func makeEngine() -> (RetractEngine, PushTransports) {
                let transports = PushTransports(
                    settings: APNsSettings(additionalTrustRootsPEM: trust, connectionsPerApp: connections), logger: benchmarkLogger)
                return (
                    RetractEngine(store: store, transports: transports, settings: EngineSettings(window: window), logger: benchmarkLogger),
                    transports
                )
            }
            if compareCampaign {
                let (engine, transports) = makeEngine()
                // The same deliveries, taken one way after the other; the order alternates between runs by a coin.
                let campaignFirst = Bool.random()
                var seconds: [Bool: Double] = [:]
                for byCampaign in campaignFirst ? [true, false] : [false, true] {
                    seconds[byCampaign] = try await Timing.retraction(
                        of: reference, app: app, count: count, engine: engine,
                        selector: byCampaign ? RetractionSelector(.campaign, campaign) : nil)
                }
                await transports.shutdown()
                print(
                    #"{"devices": \#(count), "window": \#(window), "campaignFirst": \#(campaignFirst), "referencePerSecond": \#(Double(count) / seconds[false]!), "campaignPerSecond": \#(Double(count) / seconds[true]!)}"#
                )
                return
            }
            if compareHistory {
                // The same tokens in an app without history, the same reference recorded.
                let plain = try await store.registerApp(
                    AppRegistration(
                        name: app.name + "-plain", topic: "com.example.bench", environment: .sandbox, endpoint: "https://127.0.0.1:\(port)",
                        authentication: .token(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", keyPath: URL(fileURLWithPath: key).path)),
                    actor: "bench")
                for start in stride(from: 0, to: count, by: 10_000) {
                    _ = try await store.record(
                        tokens[start..<min(start + 10_000, count)].map {
                            Delivery(appID: plain.id, reference: reference, token: $0, sentAt: Date())
                        })
                }
                // Each device received 20 earlier messages, each retracted by one retraction of its own: half by
                // reference, a quarter by sender, a quarter by thread (whose id rides along for the message).
                for index in 0..<Self.historyLength {
                    let earlier = ReferenceID("\(reference)-earlier-\(index)")
                    let selector: RetractionSelector? =
                        switch index % 4 {
                        case 1: RetractionSelector(.sender, "sender-\(index)")
                        case 3: RetractionSelector(.thread, "thread-\(index)")
                        default: nil
                        }
                    var labels = DeliveryLabels()
                    if let selector { labels[selector.kind] = selector.value }
                    for start in stride(from: 0, to: count, by: 10_000) {
                        _ = try await store.record(
                            tokens[start..<min(start + 10_000, count)].map {
                                Delivery(appID: app.id, reference: earlier, token: $0, sentAt: Date(), labels: labels)
                            })
                    }
                    _ = try await store.createRetraction(
                        RetractionRequest(
                            appID: app.id, target: selector.map { .selector($0) } ?? .references([earlier]), requestedBy: "bench"))
                }
                // The day partitions a ledger a month old holds: retention's 30 days back and 2 ahead.
                _ = try await store.client.query(
                    "SELECT retract_ensure_delivery_partition(current_date + day) FROM generate_series(-29, 2) AS day",
                    logger: benchmarkLogger
                ).collect()
                if vacuumed {
                    for table in ["deliveries", "retractions"] {
                        _ = try await store.client.query(PostgresQuery(unsafeSQL: "VACUUM (ANALYZE) \(table)"), logger: benchmarkLogger)
                            .collect()
                    }
                }
                let (engine, transports) = makeEngine()
                // The order alternates between runs by a coin.
                let historyFirst = Bool.random()
                var seconds: [Bool: Double] = [:]
                var cpu: [Bool: String] = [:]
                var carried = 0
                for withHistory in historyFirst ? [true, false] : [false, true] {
                    let before = ProcessCPU.now()
                    seconds[withHistory] = try await Timing.retraction(
                        of: reference, app: withHistory ? app : plain, count: count, engine: engine
                    ) { status in
                        if withHistory { carried = status.retraction.pushes.historyCarried }
                    }
                    cpu[withHistory] = ProcessCPU.now().json(since: before)
                }
                await transports.shutdown()
                // What rode along: every device's 20.
                guard carried == count * Self.historyLength else {
                    throw CommandFailure("the retraction carried \(carried) earlier references, not \(count * Self.historyLength)")
                }
                print(
                    #"{"devices": \#(count), "window": \#(window), "historyFirst": \#(historyFirst), "historyCarried": \#(carried), "historyPerSecond": \#(Double(count) / seconds[true]!), "plainPerSecond": \#(Double(count) / seconds[false]!), "historyCPU": \#(cpu[true]!), "plainCPU": \#(cpu[false]!)}"#
                )
                return
            }
            if compareModes {
                let (engine, transports) = makeEngine()
                // The same devices, one mode after the other; the order alternates between runs by a coin.
                let serviceExtensionFirst = Bool.random()
                var seconds: [RetractionMode: Double] = [:]
                for mode: RetractionMode in serviceExtensionFirst ? [.serviceExtension, .background] : [.background, .serviceExtension] {
                    seconds[mode] = try await Timing.retraction(of: reference, app: app, count: count, engine: engine, mode: mode)
                }
                await transports.shutdown()
                print(
                    #"{"devices": \#(count), "window": \#(window), "serviceExtensionFirst": \#(serviceExtensionFirst), "backgroundPerSecond": \#(Double(count) / seconds[.background]!), "serviceExtensionPerSecond": \#(Double(count) / seconds[.serviceExtension]!)}"#
                )
                return
            }

            // The client alone: the same pushes, the same window, no ledger.
            let clientSeconds = try await Self.timeClientAlone(
                tokens: tokens, reference: reference, window: window,
                configuration: APNsClientConfiguration(
                    environment: .custom(host: "127.0.0.1", port: port),
                    authentication: .token(key: try APNsSigningKey(contentsOfFile: key), keyID: "BENCHKEY01", teamID: "BENCHTEAM1"),
                    additionalTrustRootsPEM: trust, connectionCount: connections))

            // The engine: a retraction worked to the end by one worker.
            let (engine, transports) = makeEngine()
            let engineSeconds = try await Timing.retraction(of: reference, app: app, count: count, engine: engine)
            await transports.shutdown()
            print(
                #"{"devices": \#(count), "window": \#(window), "connections": \#(connections), "engineSeconds": \#(engineSeconds), "enginePerSecond": \#(Double(count) / engineSeconds), "clientSeconds": \#(clientSeconds), "clientPerSecond": \#(Double(count) / clientSeconds)}"#
            )
        }
    }

    private static func timeClientAlone(
        tokens: [DeviceToken], reference: ReferenceID, window: Int, configuration: APNsClientConfiguration
    ) async throws -> Double {
        let client = try APNsClient(configuration: configuration)
        let body = ByteBuffer(bytes: try PayloadBuilder().retractionBodies(for: [reference])[0])
        let requests = tokens.map { APNsRequest(deviceToken: $0.hex, topic: "com.example.bench", pushType: .background, body: body) }
        _ = try await client.send(requests[0])
        let seconds = try await Timing.inLanes(count: requests.count, window: window) { index in _ = try await client.send(requests[index])
        }
        await client.shutdown()
        return seconds
    }
}
