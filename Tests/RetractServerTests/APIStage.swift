import APNsSimulator
import Foundation
import Logging
import PostgresNIO
import Prometheus
import RetractCore
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import ServiceLifecycle
import Testing

/// A server in this process on a free port, over a scratch ledger, sending
/// to the simulator over TLS; requests go over real HTTP.
struct APIStage {
    var apns: SimulatedAPNs
    var store: RetractStore
    var server: RetractServer
    var http: HTTPCaller
    /// `chat`, registered with the simulator's key.
    var chat: App

    /// The simulator's address is allowed as an app endpoint, and the temp folder (where the
    /// simulators' keys are) is the credentials folder, as an operator of such a stage would set them.
    static let defaultSettings = ServerSettings(
        port: 0, healthInterval: .milliseconds(200), allowedEndpoints: ServerSettings.pushServiceHosts + ["127.0.0.1"],
        credentialsDirectory: FileManager.default.temporaryDirectory.path)

    static func with(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(),
        settings: ServerSettings = defaultSettings,
        fcm: SimulatedFCM? = nil,
        phones: APNsPhoneMix = APNsPhoneMix(),
        // Pools as `retract serve` has them: the reads and the ping apart from the rest.
        readPool: RetractStore.ReadPool = RetractStore.ReadPool(connections: 2),
        _ body: (APIStage) async throws -> Void
    ) async throws {
        try await SimulatedAPNs.with(faults: faults, phones: phones) { apns in
            try await TestDatabase.withStore(readPool: readPool) { store, _ in
                let chat = try await store.registerApp(apns.registration(name: "chat"), actor: "test")
                let ca = try String(contentsOfFile: apns.caPath, encoding: .utf8)
                let transports = PushTransports(
                    settings: APNsSettings(additionalTrustRootsPEM: [ca]), fcm: fcm?.settings() ?? FCMSettings(),
                    logger: TestDatabase.logger)
                let registry = PrometheusCollectorRegistry()
                let engine = RetractEngine(
                    store: store, transports: transports, settings: EngineSettings(idlePoll: .milliseconds(50)),
                    logger: TestDatabase.logger,
                    metricsFactory: RetractServer.metricsFactory(registry: registry))
                let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
                let server = RetractServer(engine: engine, settings: settings, registry: registry, logger: TestDatabase.logger) {
                    continuation.yield($0)
                }
                // Stopped as `retract serve` is on SIGTERM: a graceful shutdown of its group.
                let group = ServiceGroup(services: [server], logger: TestDatabase.logger)
                let running = Task { try await group.run() }
                defer { running.cancel() }
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else { throw HTTPCaller.CallError(description: "the server did not start") }
                var failure: (any Error)?
                do {
                    try await body(APIStage(apns: apns, store: store, server: server, http: HTTPCaller(port: port), chat: chat))
                } catch {
                    failure = error
                }
                await group.triggerGracefulShutdown()
                _ = await running.result
                await transports.shutdown()
                if let failure { throw failure }
            }
        }
    }

    /// A new API key with `scopes` on `apps`.
    func key(_ scopes: Set<APIKeyRecord.Scope>, apps: [App], name: String = "test") async throws -> String {
        let key = APIKeySecret.generate()
        try await store.createAPIKey(
            APIKeyRecord(name: name, keyHash: APIKeySecret.hash(key), scopes: scopes, appIDs: Set(apps.map(\.id)), createdBy: "test"))
        return key
    }

    /// A key with every scope but admin on `chat`.
    func chatKey() async throws -> String {
        try await key([.record, .send, .retract, .read, .client], apps: [chat], name: "chat-backend")
    }

    func call(
        _ method: String, _ path: String, key: String? = nil, body: String? = nil, headers: [String: String] = [:]
    ) async throws -> HTTPAnswer {
        try await http.call(method, path, key: key, body: body, headers: headers)
    }

    /// One number from the ledger.
    func count(_ sql: String) async throws -> Int {
        let rows = try await store.client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }

    /// Waits for a retraction to be done and returns its status.
    func waitUntilDone(_ id: String, key: String) async throws -> [String: Any] {
        let answer = try await http.poll("/v1/retractions/\(id)", key: key) { ($0.json?["state"] as? String) == "done" }
        return answer.json ?? [:]
    }

    static func hex(_ tokens: [DeviceToken]) -> String {
        "[" + tokens.map { "\"\($0.hex)\"" }.joined(separator: ",") + "]"
    }
}
