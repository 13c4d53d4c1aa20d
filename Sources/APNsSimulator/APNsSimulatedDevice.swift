import Foundation
import RetractKit
import SimulatorSupport

/// What a phone shows after the pushes it received, worked out with iOS's
/// rules and the same RetractKit code an app runs:
///
/// - an alert lands in Notification Center, identified by `apns-collapse-id`
///   (else the apns-id), so one with the same collapse id takes the place of
///   the one before, as iOS does;
/// - an alert with `mutable-content: 1` first goes through the app's
///   Notification Service Extension, when it has one, which runs even for a
///   force-quit app: RetractKit's ``RetractionServiceExtension``;
/// - a background push reaches the app only when iOS hands it over: not to a
///   force-quit app, not in Low Power Mode, and not beyond the app's budget;
///   then it goes to ``RetractionHandler``.
public enum APNsSimulatedDevice {
    /// A phone, as far as it decides what a push does.
    public struct Phone: Sendable, Hashable, Codable {
        /// The state of the app that receives the pushes.
        public enum AppState: String, Sendable, Hashable, Codable, CaseIterable {
            /// In the foreground or suspended in the background: background pushes reach it.
            case background
            /// Swiped away in the app switcher: background pushes are dropped until the user opens it again.
            case forceQuit = "force-quit"
            /// Low Power Mode: iOS holds background pushes back.
            case lowPower = "low-power"
        }

        /// The app's Notification Service Extension.
        public enum ServiceExtension: String, Sendable, Hashable, Codable, CaseIterable {
            /// None: a `mutable-content` alert is shown as sent.
            case none
            /// One without the filtering entitlement: it can change what an alert shows, not hide it.
            case unfiltered
            /// One with `com.apple.developer.usernotifications.filtering`: it can hide an alert.
            case filtering
        }

        public var appState: AppState
        public var serviceExtension: ServiceExtension
        /// How many background pushes iOS hands the app in any hour (it
        /// budgets them: a few an hour), by the time each push was received;
        /// 0 for an app that spent its budget; nil for no limit.
        public var backgroundBudget: Int?

        public init(appState: AppState = .background, serviceExtension: ServiceExtension = .none, backgroundBudget: Int? = nil) {
            self.appState = appState
            self.serviceExtension = serviceExtension
            self.backgroundBudget = backgroundBudget
        }
    }

    /// What a phone ends up with.
    public struct Screen: Sendable {
        /// The notifications showing, oldest first.
        public var showing: [DeliveredNotification]
        /// What each showing notification displays (its alert's body, or
        /// the text its extension put there), by identifier.
        public var texts: [String: String]
        /// What each background push that reached the app did.
        public var outcomes: [RetractionOutcome]
        /// Background pushes iOS did not hand to the app.
        public var dropped: Int
    }

    /// What `phone`, having received `pushes` in this order, shows.
    public static func replay(_ pushes: [APNsReceivedPush], on phone: Phone = Phone()) async -> Screen {
        let center = InMemoryNotificationCenter()
        // The app and its extension share the app group's tombstones.
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let handler = RetractionHandler(center: center, tombstones: tombstones)
        let serviceExtension = RetractionServiceExtension(
            center: center, tombstones: tombstones, hasFilteringEntitlement: phone.serviceExtension == .filtering)
        var screen = Screen(showing: [], texts: [:], outcomes: [], dropped: 0)
        var handed: [Date] = []
        for push in pushes {
            let userInfo = push.userInfo
            if push.pushType == "background" {
                let lastHour = handed.filter { push.receivedAt.timeIntervalSince($0) < 3600 }.count
                let overBudget = phone.backgroundBudget.map { lastHour >= $0 } ?? false
                guard phone.appState == .background, !overBudget else {
                    screen.dropped += 1
                    continue
                }
                handed.append(push.receivedAt)
                screen.outcomes.append(await handler.handle(userInfo: userInfo))
                continue
            }
            let identifier = push.collapseID ?? push.apnsID.uuidString
            var text = alertBody(of: userInfo)
            if phone.serviceExtension != .none, isMutable(userInfo) {
                switch await serviceExtension.decide(identifier: identifier, userInfo: userInfo) {
                case .suppress: continue
                case .passThrough: break
                case .replaceBody(let body): text = body
                }
            }
            center.deliver(DeliveredNotification(identifier: identifier, userInfo: userInfo))
            screen.texts[identifier] = text
        }
        screen.showing = center.delivered
        screen.texts = screen.texts.filter { identifier, _ in screen.showing.contains { $0.identifier == identifier } }
        return screen
    }

    private static func isMutable(_ userInfo: [AnyHashable: Any]) -> Bool {
        ((userInfo["aps"] as? [String: Any])?["mutable-content"] as? NSNumber)?.intValue == 1
    }

    /// An alert's body: `aps.alert` as a string, or its `body`.
    private static func alertBody(of userInfo: [AnyHashable: Any]) -> String {
        let alert = (userInfo["aps"] as? [String: Any])?["alert"]
        return alert as? String ?? (alert as? [String: Any])?["body"] as? String ?? ""
    }
}

/// The phones a simulator's devices are: a mix of kinds by share, each token
/// given one by its hash, so a token is always the same phone.
public struct APNsPhoneMix: Sendable, Hashable {
    /// One kind of phone and its share of the devices.
    public struct Share: Sendable, Hashable {
        public var phone: APNsSimulatedDevice.Phone
        public var weight: Int

        public init(_ phone: APNsSimulatedDevice.Phone, weight: Int) {
            self.phone = phone
            self.weight = weight
        }
    }

    public var shares: [Share]

    /// Every device the same `phone`.
    public init(_ phone: APNsSimulatedDevice.Phone = APNsSimulatedDevice.Phone()) {
        shares = [Share(phone, weight: 1)]
    }

    public init(shares: [Share]) {
        self.shares = shares.filter { $0.weight > 0 }
    }

    /// The phone `token` is.
    public func phone(for token: String) -> APNsSimulatedDevice.Phone {
        let total = shares.reduce(0) { $0 + $1.weight }
        guard total > 0 else { return APNsSimulatedDevice.Phone() }
        // FNV-1a: stable across runs and processes, unlike Hasher.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.lowercased().utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var slot = Int(hash % UInt64(total))
        for share in shares {
            if slot < share.weight { return share.phone }
            slot -= share.weight
        }
        return shares[shares.count - 1].phone
    }
}
