import FCMSimulator
import Foundation
import RetractAPNs
import RetractCore
import RetractFCM
import RetractKit
import RetractModel
import RetractStore

/// The FCM simulator over TLS in this process, with a service account's
/// JSON file on disk (its token URI the simulator's) and the simulator's
/// certificate authority written where clients and child processes
/// (through `--fcm-ca`) can trust it.
package struct SimulatedFCM: Sendable {
    package static let projectID = "retract-tests"

    package let simulator: FCMSimulator
    /// A scratch folder, removed after the test.
    package let folder: URL
    /// The service account's JSON file, as Google issues it.
    package let serviceAccountPath: String
    package let caPath: String

    package var endpoint: String { simulator.baseURL }

    /// The engine's FCM settings for this simulator.
    package func settings() -> FCMSettings {
        FCMSettings(messagesBaseURL: endpoint, additionalTrustRootsPEM: [simulator.certificateAuthorityPEM])
    }

    /// Runs `body` with a started simulator, stopped and cleaned up afterwards.
    package static func with(_ body: (SimulatedFCM) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-fcm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var account = try FCMSimulator.makeServiceAccount(projectID: projectID)
        let simulator = try await FCMSimulator.start(FCMSimulatorConfiguration(accounts: [.init(account)]))
        account.tokenURI = simulator.tokenURI
        let accountPath = folder.appendingPathComponent("service-account.json").path
        let caPath = folder.appendingPathComponent("fcm-simulator-ca.pem").path
        let fcm = SimulatedFCM(simulator: simulator, folder: folder, serviceAccountPath: accountPath, caPath: caPath)
        do {
            try account.json().write(to: URL(fileURLWithPath: accountPath))
            try Data(simulator.certificateAuthorityPEM.utf8).write(to: URL(fileURLWithPath: caPath))
            try await body(fcm)
            await simulator.stop()
        } catch {
            await simulator.stop()
            throw error
        }
    }

    /// An FCM registration token of the usual shape, different for each `index`.
    package static func token(_ index: Int) -> DeviceToken {
        let id = String(format: "%06d", index)
        return DeviceToken(bytes: Array("dev\(id)-fcm-0123456789ab:APA91b\(String(repeating: "Qx7_", count: 32))\(id)".utf8))
    }

    package static func tokens(_ range: Range<Int>) -> [DeviceToken] { range.map(token) }

    /// What `token` received, as an iPhone's app gets it.
    package func inbox(_ token: DeviceToken) -> [FCMReceivedMessage] {
        simulator.inbox(for: PushService.fcm.text(of: token))
    }
}
