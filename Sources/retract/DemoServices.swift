import APNsSimulator
import ArgumentParser
import Crypto
import FCMSimulator
import Foundation
import Logging
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import SimulatorSupport

/// How `retract demo` reaches its devices.
enum DemoTransport: String, ExpressibleByArgument, CaseIterable {
    case apns, fcm, mixed

    var services: [PushService] {
        switch self {
        case .apns: [.apns]
        case .fcm: [.fcm]
        case .mixed: [.apns, .fcm]
        }
    }
}

/// The simulators a demo sends through, with the credentials each trusts
/// written to the demo's folder as Apple and Google issue them.
struct DemoServices {
    var apns: (simulator: APNsSimulator, keyPath: String)?
    var fcm: (simulator: FCMSimulator, accountPath: String)?

    static let keyID = "DEMOKEY001"
    static let teamID = "DEMOTEAM01"

    static func start(_ transport: DemoTransport, in folder: URL) async throws -> DemoServices {
        var services = DemoServices()
        if transport.services.contains(.apns) {
            // A signing key as Apple issues it (.p8), and a simulator that trusts it.
            services.apns = try await APNsSimulator.start(withNewKeyIn: folder, keyID: keyID, teamID: teamID)
        }
        if transport.services.contains(.fcm) {
            do {
                // A service account as Google issues it (JSON), whose token URI is the simulator's.
                let placeholder = try FCMSimulator.makeServiceAccount(projectID: "retract-demo")
                let simulator = try await FCMSimulator.start(FCMSimulatorConfiguration(accounts: [.init(placeholder)]))
                var account = placeholder
                account.tokenURI = simulator.tokenURI
                let accountPath = folder.appendingPathComponent("retract-demo-service-account.json").path
                try account.json().write(to: URL(fileURLWithPath: accountPath))
                services.fcm = (simulator, accountPath)
            } catch {
                await services.stop()
                throw error
            }
        }
        return services
    }

    func stop() async {
        try? await apns?.simulator.stop()
        await fcm?.simulator.stop()
    }

    var descriptions: [String] {
        var lines: [String] = []
        if let apns { lines.append("APNs     simulator on 127.0.0.1:\(apns.simulator.port) (HTTP/2, TLS, provider tokens)") }
        if let fcm {
            lines.append("FCM      simulator on 127.0.0.1:\(fcm.simulator.port) (HTTP/2, TLS, OAuth2 tokens from a service account)")
        }
        return lines
    }

    func registration(name: String) -> AppRegistration {
        AppRegistration(
            name: name, topic: "com.example.retract.demo", environment: .sandbox,
            endpoint: apns.map { "https://127.0.0.1:\($0.simulator.port)" },
            authentication: apns.map { .token(keyID: Self.keyID, teamID: Self.teamID, keyPath: $0.keyPath) } ?? .fcmOnly,
            fcmServiceAccountPath: fcm?.accountPath)
    }

    func transports(logger: Logger) -> PushTransports {
        PushTransports(
            settings: APNsSettings(additionalTrustRootsPEM: [apns?.simulator.certificateAuthorityPEM].compactMap { $0 }),
            fcm: FCMSettings(
                messagesBaseURL: fcm?.simulator.baseURL ?? FCMSettings().messagesBaseURL,
                additionalTrustRootsPEM: [fcm?.simulator.certificateAuthorityPEM].compactMap { $0 }),
            logger: logger)
    }

    /// `count` devices, split between the services in use.
    func makeDevices(_ count: Int) -> [(service: PushService, tokens: [DeviceToken])] {
        let services = (apns == nil ? [] : [PushService.apns]) + (fcm == nil ? [] : [.fcm])
        return services.enumerated().map { index, service in
            let share = count / services.count + (index < count % services.count ? 1 : 0)
            return (service, (0..<share).map { _ in Self.randomToken(service) })
        }
    }

    /// A token of the form each service issues: 32 bytes for APNs, an FCM
    /// registration token (an instance id, a colon and a long base64url string).
    static func randomToken(_ service: PushService) -> DeviceToken {
        switch service {
        case .apns:
            return DeviceToken(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
        case .fcm:
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
            let random = { (count: Int) in (0..<count).map { _ in alphabet.randomElement()! } }
            return DeviceToken(bytes: random(22) + Array(":APA91b".utf8) + random(134))
        }
    }

    func uninstall(_ token: DeviceToken, of service: PushService) {
        switch service {
        case .apns: apns?.simulator.unregister(deviceToken: token.hex)
        case .fcm: fcm?.simulator.unregister(service.text(of: token))
        }
    }

    /// What a device received, as APNs handed it to the iPhone.
    func received(by token: DeviceToken, via service: PushService) -> [APNsReceivedPush] {
        switch service {
        case .apns: apns?.simulator.inbox(for: token.hex) ?? []
        case .fcm: fcm?.simulator.inbox(for: service.text(of: token)).map(\.asAPNsPush) ?? []
        }
    }

    /// The phone each device is: 80% with the app in the background, 15%
    /// force-quit, 5% over their background-push budget, every app with a
    /// Notification Service Extension without the filtering entitlement.
    static func phone(at index: Int) -> APNsSimulatedDevice.Phone {
        switch index % 20 {
        case 16, 17, 18: APNsSimulatedDevice.Phone(appState: .forceQuit, serviceExtension: .unfiltered)
        case 19: APNsSimulatedDevice.Phone(serviceExtension: .unfiltered, backgroundBudget: 0)
        default: APNsSimulatedDevice.Phone(serviceExtension: .unfiltered)
        }
    }

    /// What the phones show of a notification with `reference`: those still
    /// showing it, and how many show the retraction text in its place.
    func showing(
        _ reference: ReferenceID, on devices: [(service: PushService, tokens: [DeviceToken])]
    ) async -> (original: Set<DeviceToken>, notices: Int) {
        var original: Set<DeviceToken> = []
        var notices = 0
        var index = 0
        for (service, tokens) in devices {
            for token in tokens {
                let screen = await APNsSimulatedDevice.replay(received(by: token, via: service), on: Self.phone(at: index))
                index += 1
                // A carrier shown with the retraction text names the reference too; it is not the original.
                let shown = screen.showing.filter { screen.texts[$0.identifier] != RetractionMode.defaultText }
                if shown.contains(where: { $0.referenceID == reference }) { original.insert(token) }
                if screen.texts.values.contains(RetractionMode.defaultText) { notices += 1 }
            }
        }
        return (original, notices)
    }
}
