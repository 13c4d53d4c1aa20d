import APNsSimulator
import Crypto
import FCMSimulator
import Foundation
import PostgresNIO
import RetractFCM
import RetractKit
import RetractModel
import RetractStore
import SimulatorSupport

/// One scenario's world: the APNs simulator (and FCM's, for a mixed app)
/// in this process, holding every device's inbox; a database of its own;
/// and the environment `retract` runs in to reach them.
final class Fleet: Sendable {
    static let keyID = "CHAOSKEY01"
    static let teamID = "CHAOSTEAM1"

    let stage: ChaosStage
    let apns: APNsSimulator
    let fcm: FCMSimulator?
    let databaseURL: String
    let keyPath: String
    let serviceAccountPath: String?
    /// DATABASE_URL and where the simulators are, for every `retract` command.
    let environment: [String: String]
    let folder: URL

    private init(
        stage: ChaosStage, apns: APNsSimulator, fcm: FCMSimulator?, databaseURL: String, keyPath: String, serviceAccountPath: String?,
        environment: [String: String], folder: URL
    ) {
        self.stage = stage
        self.apns = apns
        self.fcm = fcm
        self.databaseURL = databaseURL
        self.keyPath = keyPath
        self.serviceAccountPath = serviceAccountPath
        self.environment = environment
        self.folder = folder
    }

    /// Runs `body` with simulators started with `faults` (and FCM's when
    /// `fcm`), on a new database; everything is stopped afterwards.
    /// - Parameter database: a database of the scenario's own (migrated
    ///   here, kept afterwards), instead of a scratch one on the stage's cluster.
    static func with<Result: Sendable>(
        _ stage: ChaosStage, name: String, faults: APNsSimulatorFaults, fcm withFCM: Bool = false, database: String? = nil,
        _ body: (Fleet) async throws -> Result
    ) async throws -> Result {
        let folder = stage.folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let (apns, keyPath) = try await APNsSimulator.start(
            withNewKeyIn: folder, keyID: keyID, teamID: teamID, configuration: APNsSimulatorConfiguration(faults: faults))
        var fcm: FCMSimulator?
        var serviceAccountPath: String?
        var environment = ["APNS_CA_FILE": folder.appendingPathComponent("simulator-ca.pem").path]
        do {
            if withFCM {
                var account = try FCMSimulator.makeServiceAccount(projectID: "retract-chaos")
                let simulator = try await FCMSimulator.start(FCMSimulatorConfiguration(accounts: [.init(account)]))
                fcm = simulator
                account.tokenURI = simulator.tokenURI
                let path = folder.appendingPathComponent("service-account.json").path
                try account.json().write(to: URL(fileURLWithPath: path))
                let caPath = folder.appendingPathComponent("fcm-ca.pem").path
                try Data(simulator.certificateAuthorityPEM.utf8).write(to: URL(fileURLWithPath: caPath))
                serviceAccountPath = path
                environment["FCM_ENDPOINT"] = simulator.baseURL
                environment["FCM_CA_FILE"] = caPath
            }
            func withFleet(_ url: String) async throws -> Result {
                environment["DATABASE_URL"] = url
                let fleet = Fleet(
                    stage: stage, apns: apns, fcm: fcm, databaseURL: url, keyPath: keyPath, serviceAccountPath: serviceAccountPath,
                    environment: environment, folder: folder)
                return try await body(fleet)
            }
            let result: Result
            if let database {
                try stage.run(["migrate", "--database-url", database]).check("retract migrate")
                result = try await withFleet(database)
            } else {
                result = try await stage.withDatabase { try await withFleet($0) }
            }
            try await apns.stop()
            await fcm?.stop()
            return result
        } catch {
            try? await apns.stop()
            await fcm?.stop()
            throw error
        }
    }

    /// `retract` with this fleet's environment.
    @discardableResult
    func run(_ arguments: [String]) throws -> CommandResult {
        try stage.run(arguments, environment: environment)
    }

    /// `retract apps add`: an app sending to the simulator with its key (and FCM's account when `fcm`).
    func addApp(_ name: String, fcm: Bool = false) throws {
        var arguments = [
            "apps", "add", name, "--topic", "com.example.\(name)", "--environment", "sandbox", "--endpoint",
            "https://127.0.0.1:\(apns.port)",
            "--key-id", Self.keyID, "--team-id", Self.teamID, "--key-path", keyPath,
        ]
        if fcm, let serviceAccountPath { arguments += ["--fcm-service-account", serviceAccountPath] }
        try run(arguments).check("retract apps add")
    }

    /// `retract send`: an alert with `reference` to `tokens`, recorded in the
    /// ledger and delivered to the inboxes; `extra` goes to the command.
    func send(_ reference: String, app: String, tokens: [DeviceToken], via service: PushService = .apns, extra: [String] = []) throws {
        let tokensFile = folder.appendingPathComponent("tokens-\(UUID().uuidString.prefix(8)).txt")
        try Data(tokens.map { service.text(of: $0) }.joined(separator: "\n").utf8).write(to: tokensFile)
        defer { try? FileManager.default.removeItem(at: tokensFile) }
        let payload = folder.appendingPathComponent("payload.json")
        try Data(#"{"aps":{"alert":{"title":"A message","body":"that will be taken back"}}}"#.utf8).write(to: payload)
        // 3: some devices failed (the dead ones a scenario set up).
        try run(
            [
                "send", "--app", app, "--reference", reference, "--payload", payload.path, "--tokens-file", tokensFile.path,
                "--transport", service.rawValue, "--json",
            ] + extra
        ).check("retract send", allowing: [0, 3])
    }

    /// `retract notification --no-wait`: queues the retraction of `reference` for the workers; its id.
    func queueRetraction(of reference: String, app: String) throws -> UUID {
        struct Queued: Decodable { var id: String }
        let queued = try run(["notification", reference, "--app", app, "--no-wait", "--json", "--reason", "chaos"])
            .check("retract notification").json(Queued.self)
        guard let id = UUID(uuidString: queued.id) else { throw ChaosError("retract notification printed the id \(queued.id)") }
        return id
    }

    /// `retract serve --mode workers` processes sharing the queue.
    func startWorkers(_ count: Int, lease: Int, extra: [String] = []) throws -> [ChildProcess] {
        try (0..<count).map { index in
            try stage.start(
                ["serve", "--mode", "workers", "--port", "0", "--lease", "\(lease)", "--log-level", stage.workerLogLevel] + extra,
                environment: environment, name: "\(folder.lastPathComponent)-worker-\(index + 1)")
        }
    }

    /// Reads the retraction from the ledger every 100 ms, handing each read
    /// to `watch`, until it is done or failed; nil after `limit`. A read that
    /// fails (the database restarting) is tried again.
    func waitUntilFinished(
        _ id: UUID, limit: Duration, watch: (Retraction, Duration) async throws -> Void = { _, _ in }
    ) async throws -> Retraction? {
        let started = ContinuousClock.now
        return try await RetractStore.withStore(url: try DatabaseURL(databaseURL), maximumConnections: 2, logger: stage.logger) { store in
            while ContinuousClock.now - started < limit {
                if let retraction = try? await store.retraction(id: id) {
                    try await watch(retraction, ContinuousClock.now - started)
                    if retraction.state.isFinished { return retraction }
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            return nil
        }
    }

    /// A retraction worked to its end by worker processes.
    struct Run {
        var id: UUID
        /// As last read: nil when it did not finish within the limit.
        var retraction: Retraction?
        /// From being queued to being finished (or to the limit).
        var seconds: Double
    }

    /// Starts `workers` `retract serve --mode workers` processes, queues the
    /// retraction of `reference`, hands every read of it to `watch` (with the
    /// workers, to kill one) until it is finished or `limit` has passed, and
    /// stops the workers.
    func retract(
        _ reference: String, app: String, workers count: Int = 1, lease: Int = 10, extra: [String] = [], limit: Duration = .seconds(900),
        watch: (Retraction, [ChildProcess]) async throws -> Void = { _, _ in }
    ) async throws -> Run {
        let workers = try startWorkers(count, lease: lease, extra: extra)
        let id = try queueRetraction(of: reference, app: app)
        var seconds = 0.0
        let finished = try await waitUntilFinished(id, limit: limit) { retraction, elapsed in
            seconds = elapsed.inSeconds
            try await watch(retraction, workers)
        }
        for worker in workers { await worker.stop() }
        return Run(id: id, retraction: finished, seconds: seconds)
    }

    /// `retract status --json`: the account a user reads.
    func account(_ id: UUID) throws -> Account {
        try run(["status", id.uuidString.lowercased(), "--json"]).check("retract status").json(Account.self)
    }

    struct Account: Decodable {
        var state: String
        var total: Int
        var sent: Int
        var unregistered: Int
        var failed: Int
        var skipped: Int
        var failures: [String: Int]
    }

    /// Runs SQL of the scenario's own on its database: a fault to inject.
    func execute(_ sql: String) async throws {
        try await RetractStore.withStore(url: try DatabaseURL(databaseURL), maximumConnections: 1, logger: stage.logger) { store in
            _ = try await store.client.query(PostgresQuery(unsafeSQL: sql), logger: stage.logger).collect()
        }
    }

    /// What the devices show now, with RetractKit applied to each inbox.
    func screen(of reference: ReferenceID, apnsDevices: [DeviceToken], fcmDevices: [DeviceToken] = []) async -> Screen {
        var screen = Screen()
        for token in apnsDevices { await screen.add(apns.inbox(for: token.hex), reference: reference, token: token) }
        if let fcm {
            for token in fcmDevices {
                await screen.add(fcm.inbox(for: PushService.fcm.text(of: token)).map(\.asAPNsPush), reference: reference, token: token)
            }
        }
        return screen
    }
}

/// What a fleet of devices ended up showing for one reference.
struct Screen {
    /// Whether `reference` comes first in the push's list of references
    /// (a retraction's own come first); true for a push without a list.
    static func leads(_ push: APNsReceivedPush, with reference: ReferenceID) -> Bool {
        let customData = push.userInfo[PayloadDialect.canonical.customDataKey] as? [String: Any]
        guard let first = (customData?[PayloadDialect.referenceIDsKey] as? [String])?.first else { return true }
        return first == reference.rawValue
    }

    /// Devices that got at least one removal push for the reference.
    var reached = 0
    /// Removal pushes for the reference beyond the first on each device.
    var duplicates = 0
    /// Devices that still show the notification.
    var showing: [DeviceToken] = []

    mutating func add(_ pushes: [APNsReceivedPush], reference: ReferenceID, token: DeviceToken) async {
        let removals = pushes.filter {
            $0.pushType == "background" && RetractPayload.retraction(in: $0.userInfo)?.contains(reference) == true
        }
        if !removals.isEmpty { reached += 1 }
        // A later retraction's push to the device carries this reference too, after its own
        // (earlier retractions ride along, docs/payload.md): that is not a duplicate.
        duplicates += max(removals.filter { Self.leads($0, with: reference) }.count - 1, 0)
        let replayed = await APNsSimulatedDevice.replay(pushes)
        if replayed.showing.contains(where: { $0.referenceID == reference }) { showing.append(token) }
    }
}

/// Device tokens for a scenario: 32 bytes, the number in the last eight.
enum ChaosTokens {
    static func apns(_ range: Range<Int>) -> [DeviceToken] {
        range.map { number in
            var bytes = [UInt8](repeating: 0xC4, count: 32)
            withUnsafeBytes(of: UInt64(number).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
            return DeviceToken(bytes: bytes)
        }
    }

    static func fcm(_ range: Range<Int>) -> [DeviceToken] {
        range.map { DeviceToken(bytes: Array("chaos\(String(format: "%07d", $0)):APA91b\(String(repeating: "Zq9_", count: 30))".utf8)) }
    }
}
