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
    /// RetractKit for Android's classes, which the Android phones (FCM devices) run.
    var androidClasses: URL?

    static let keyID = "DEMOKEY001"
    static let teamID = "DEMOTEAM01"

    static func start(_ transport: DemoTransport, in folder: URL) async throws -> DemoServices {
        var services = DemoServices()
        if transport.services.contains(.fcm) {
            // Before anything starts: without a JDK there are no Android phones to show.
            services.androidClasses = try AndroidReplay.classes(root: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        }
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

    /// The iPhone each APNs device is: 80% with the app in the background, 15%
    /// force-quit, 5% over their background-push budget, every app with a
    /// Notification Service Extension without the filtering entitlement.
    static func phone(at index: Int) -> APNsSimulatedDevice.Phone {
        switch index % 20 {
        case 16, 17, 18: APNsSimulatedDevice.Phone(appState: .forceQuit, serviceExtension: .unfiltered)
        case 19: APNsSimulatedDevice.Phone(serviceExtension: .unfiltered, backgroundBudget: 0)
        default: APNsSimulatedDevice.Phone(serviceExtension: .unfiltered)
        }
    }

    /// The Android phone each FCM device is: 80% with the app in the
    /// background, 15% whose user force-stopped the app at `forceStop` (once
    /// the original showed), 5% in Doze with the app's high-priority data
    /// messages lowered to normal by Firebase.
    static func androidPhone(at index: Int, forceStop: Date) -> AndroidPhone {
        switch index % 20 {
        case 16, 17, 18: AndroidPhone(forceStoppedSince: forceStop)
        case 19: AndroidPhone(dozing: true, priorityLowered: true)
        default: AndroidPhone()
        }
    }

    /// Why the Android phone at `index` gets no retraction sent after
    /// `forceStop`: force-stopped, or in Doze holding it; nil when it gets it.
    static func androidPhoneUnreached(at index: Int) -> AndroidUnreached? {
        switch index % 20 {
        case 16, 17, 18: .forceStopped
        case 19: .dozing
        default: nil
        }
    }

    enum AndroidUnreached {
        case forceStopped, dozing
    }

    /// What the phones show of a notification with `reference`.
    struct Screens {
        /// The devices still showing it, by service: iPhones (APNs) and Android phones (FCM).
        var original: [PushService: Set<DeviceToken>] = [:]
        /// iPhones showing the retraction text in its place.
        var notices = 0
        /// iPhones whose screen a retraction's push lit (a carrier shown as an active alert).
        var woken = 0

        var all: Set<DeviceToken> { original.values.reduce(into: []) { $0.formUnion($1) } }
    }

    /// What the phones show of `reference`: iPhones worked out by RetractKit
    /// with iOS's rules for each phone's state; Android phones by RetractKit
    /// for Android, run as a process from ``androidClasses``, on what FCM and
    /// Android hand each phone's app in its state.
    func showing(
        _ reference: ReferenceID, on devices: [(service: PushService, tokens: [DeviceToken])], forceStop: Date
    ) async throws -> Screens {
        var screens = Screens()
        var android: [(device: String, events: [AndroidPhone.Event])] = []
        var androidTokens: [String: DeviceToken] = [:]
        for (index, service, token) in Self.numbered(devices) {
            switch service {
            case .apns:
                let inbox = apns?.simulator.inbox(for: token.hex) ?? []
                let screen = await APNsSimulatedDevice.replay(inbox, on: Self.phone(at: index))
                let retractions = inbox.filter { RetractPayload.read($0.userInfo).retraction != nil }.map(\.apnsID)
                if screen.wasWoken(byAnyOf: retractions) { screens.woken += 1 }
                // A carrier shown with the retraction text names the reference too; it is not the original.
                let shown = screen.showing.filter { screen.texts[$0.identifier] != RetractionMode.defaultText }
                if shown.contains(where: { $0.referenceID == reference }) { screens.original[.apns, default: []].insert(token) }
                if screen.texts.values.contains(RetractionMode.defaultText) { screens.notices += 1 }
            case .fcm:
                let text = service.text(of: token)
                let phone = Self.androidPhone(at: index, forceStop: forceStop)
                android.append((text, phone.delivery(of: fcm?.simulator.inbox(for: text) ?? []).events))
                androidTokens[text] = token
            }
        }
        guard !android.isEmpty else { return screens }
        try mark(android, showing: reference, tokens: androidTokens, in: &screens, feed: nil)
        return screens
    }

    /// Every device with its service and its place among them all, which says what phone it is.
    static func numbered(
        _ devices: [(service: PushService, tokens: [DeviceToken])]
    ) -> [(index: Int, service: PushService, token: DeviceToken)] {
        devices.flatMap { group in group.tokens.map { (group.service, $0) } }.enumerated().map { ($0.offset, $0.element.0, $0.element.1) }
    }

    /// The Android phones still showing `reference` later: Doze's
    /// maintenance window has come, and the users of force-stopped apps have
    /// opened them, which read the device feed at `feed` as they start.
    func androidShowingLater(
        _ reference: ReferenceID, on devices: [(service: PushService, tokens: [DeviceToken])], forceStop: Date, feed: AndroidReplay.Feed
    ) throws -> Set<DeviceToken> {
        var android: [(device: String, events: [AndroidPhone.Event])] = []
        var androidTokens: [String: DeviceToken] = [:]
        for (index, service, token) in Self.numbered(devices) where service == .fcm {
            let text = service.text(of: token)
            var phone = Self.androidPhone(at: index, forceStop: forceStop)
            phone.dozing = false
            var events = phone.delivery(of: fcm?.simulator.inbox(for: text) ?? []).events
            if phone.forceStoppedSince != nil { events.append(.appStart) }
            android.append((text, events))
            androidTokens[text] = token
        }
        var screens = Screens()
        try mark(android, showing: reference, tokens: androidTokens, in: &screens, feed: feed)
        return screens.original[.fcm, default: []]
    }

    /// Runs RetractKit for Android on `phones` and notes those still showing `reference`.
    private func mark(
        _ phones: [(device: String, events: [AndroidPhone.Event])], showing reference: ReferenceID, tokens: [String: DeviceToken],
        in screens: inout Screens, feed: AndroidReplay.Feed?
    ) throws {
        guard let androidClasses else {
            throw AndroidReplay.Failure(description: "the Android phones need RetractKit for Android's classes")
        }
        for (device, shown) in try AndroidReplay.screens(of: phones, classes: androidClasses, feed: feed)
        where shown.contains(where: { $0.references.contains(reference.rawValue) }) {
            if let token = tokens[device] { screens.original[.fcm, default: []].insert(token) }
        }
    }
}
