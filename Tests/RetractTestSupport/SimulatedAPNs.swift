import APNsSimulator
import Crypto
import Foundation
import RetractKit
import RetractModel
import RetractStore
import SimulatorSupport

/// The APNs simulator over TLS in this process, with a signing key on disk
/// for apps to use and its certificate authority written where clients (and
/// child processes, through `--apns-ca`) can trust it.
package struct SimulatedAPNs: Sendable {
    package static let keyID = "TESTKEY001"
    package static let teamID = "TESTTEAM01"

    package let simulator: APNsSimulator
    /// A scratch folder, removed after the test: the key, the CA, other input files.
    package let folder: URL
    /// The `.p8` file the simulator accepts provider tokens from.
    package let keyPath: String
    /// The simulator's certificate authority, PEM.
    package let caPath: String

    package var endpoint: String { "https://127.0.0.1:\(simulator.port)" }

    /// Runs `body` with a simulator started with `faults`, stopped and cleaned up afterwards.
    /// With `clientCertificateRootsPEM`, it also takes client certificates those authorities issued;
    /// `phones` are the kinds of phone its devices are (what ``APNsSimulator/screen(of:)`` replays on).
    package static func with(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(), clientCertificateRootsPEM: [String] = [],
        phones: APNsPhoneMix = APNsPhoneMix(),
        _ body: (SimulatedAPNs) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (simulator, keyPath) = try await APNsSimulator.start(
            withNewKeyIn: folder, keyID: keyID, teamID: teamID,
            configuration: APNsSimulatorConfiguration(clientCertificateRootsPEM: clientCertificateRootsPEM, faults: faults, phones: phones))
        let apns = SimulatedAPNs(
            simulator: simulator, folder: folder, keyPath: keyPath, caPath: folder.appendingPathComponent("simulator-ca.pem").path)
        do {
            try await body(apns)
            try await simulator.stop()
        } catch {
            try? await simulator.stop()
            throw error
        }
    }

    /// An app that sends to this simulator with its key.
    package func registration(name: String, dialect: PayloadDialect = .canonical, keyPath: String? = nil) -> AppRegistration {
        AppRegistration(
            name: name, topic: "com.example.\(name)", environment: .sandbox, endpoint: endpoint, dialect: dialect,
            authentication: .token(keyID: Self.keyID, teamID: Self.teamID, keyPath: keyPath ?? self.keyPath))
    }

    /// The `retract apps add` arguments for ``registration(name:dialect:keyPath:)``.
    package func appsAddArguments(name: String, keyPath: String? = nil) -> [String] {
        [
            "apps", "add", name, "--topic", "com.example.\(name)", "--environment", "sandbox", "--endpoint", endpoint,
            "--key-id", Self.keyID, "--team-id", Self.teamID, "--key-path", keyPath ?? self.keyPath,
        ]
    }

    /// Writes `text` to a file in the scratch folder and returns its path.
    package func file(_ name: String, _ text: String) throws -> String {
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// The pushes device `token` received, in order.
    package func inbox(_ token: DeviceToken) -> [APNsReceivedPush] {
        simulator.inbox(for: token.hex)
    }
}

/// Device tokens for tests: 32 bytes, the number in the last eight, so they sort by number.
package enum TestTokens {
    package static func token(_ number: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0xA0, count: 32)
        withUnsafeBytes(of: UInt64(number).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        return DeviceToken(bytes: bytes)
    }

    package static func tokens(_ range: Range<Int>) -> [DeviceToken] { range.map(token) }
}
