import Foundation
import RetractKit
import SimulatorSupport

/// What a phone shows after the pushes it received, worked out with iOS's
/// rules and the same RetractKit code an app runs:
///
/// - an alert lands in Notification Center, identified by `apns-collapse-id`
///   (else the apns-id), so one with the same collapse id takes the place of
///   the one before, as iOS does; it lights the screen (``Screen/woken``)
///   unless it is passive (`interruption-level`) on iOS 15 or later;
/// - an alert with `mutable-content: 1` first goes through the app's
///   Notification Service Extension, when it has one, which runs even for a
///   force-quit app: RetractKit's ``RetractionServiceExtension``;
/// - a background push reaches the app only when iOS hands it over: not to a
///   force-quit app, not in Low Power Mode, and not beyond the app's budget;
///   then it goes to ``RetractionHandler``, which removes what a retraction
///   names and shows an edit's text in place of its original.
///
/// Before those rules, two that keep only the latest push: while the phone is
/// offline APNs stores one push per app, the latest, and delivers it when the
/// phone is back; and of background pushes to a suspended app arriving close
/// together (``Phone/burstWindow``), iOS wakes the app once, with the latest.
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
        /// Seconds: a background push to a suspended (`background`) app
        /// followed by another within this time is dropped in favour of the
        /// later one, as iOS wakes the app once for a burst. Nil or 0 hands
        /// every push over.
        public var burstWindow: TimeInterval?
        /// When the phone was offline, oldest first: APNs keeps only the
        /// latest push sent in each period and delivers it at the period's end.
        public var offline: [OfflinePeriod]
        /// The iOS it runs: passive alerts light no screen from iOS 15, and
        /// the filtering entitlement hides alerts from iOS 13.3.
        public var iOSVersion: IOSVersion

        public init(
            appState: AppState = .background, serviceExtension: ServiceExtension = .none, backgroundBudget: Int? = nil,
            burstWindow: TimeInterval? = nil, offline: [OfflinePeriod] = [], iOSVersion: IOSVersion = .current
        ) {
            self.appState = appState
            self.serviceExtension = serviceExtension
            self.backgroundBudget = backgroundBudget
            self.burstWindow = burstWindow
            self.offline = offline
            self.iOSVersion = iOSVersion
        }

        // Written by hand so that JSON from before `offline` and `iOSVersion` existed still decodes.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            appState = try container.decodeIfPresent(AppState.self, forKey: .appState) ?? .background
            serviceExtension = try container.decodeIfPresent(ServiceExtension.self, forKey: .serviceExtension) ?? .none
            backgroundBudget = try container.decodeIfPresent(Int.self, forKey: .backgroundBudget)
            burstWindow = try container.decodeIfPresent(TimeInterval.self, forKey: .burstWindow)
            offline = try container.decodeIfPresent([OfflinePeriod].self, forKey: .offline) ?? []
            iOSVersion = try container.decodeIfPresent(IOSVersion.self, forKey: .iOSVersion) ?? .current
        }

        /// Whether the app's extension can hide an alert: it has the
        /// filtering entitlement, and the phone's iOS knows it.
        public var canFilter: Bool { serviceExtension == .filtering && iOSVersion >= .filtering }
    }

    /// A time the phone could not be reached: from `start` until `end`, or
    /// still offline when `end` is nil.
    public struct OfflinePeriod: Sendable, Hashable, Codable {
        public var start: Date
        public var end: Date?

        public init(start: Date, end: Date? = nil) {
            self.start = start
            self.end = end
        }

        /// Whether a push sent at `time` found the phone offline.
        public func contains(_ time: Date) -> Bool {
            time >= start && end.map { time < $0 } ?? true
        }
    }

    /// What a phone ends up with.
    public struct Screen: Sendable {
        /// The notifications showing, oldest first.
        public var showing: [DeliveredNotification]
        /// What each showing notification displays (its alert's body, the
        /// text its extension put there, or an edit's), by identifier.
        public var texts: [String: String]
        /// The title each showing notification displays, where it has one.
        public var titles: [String: String]
        /// What each background push that reached the app did.
        public var outcomes: [RetractionOutcome]
        /// What each edit that reached the app or its extension changed.
        public var edits: [EditReport]
        /// Background pushes iOS did not hand to the app (force-quit, Low
        /// Power Mode, over budget).
        public var dropped: Int
        /// Background pushes to the suspended app dropped for a later one
        /// within ``Phone/burstWindow``.
        public var coalesced: Int
        /// Pushes sent while the phone was offline that a later one sent in
        /// the same period replaced, so they never reached it.
        public var storedAndReplaced: Int
        /// Pushes APNs still holds for the phone, which is offline: 0 or 1.
        public var stored: Int
        /// The apns-id of each alert that lit the screen (and sounded, when
        /// it had a sound), in the order they came: every alert shown but
        /// a passive one on iOS 15 or later. Background pushes, alerts an
        /// extension hid and edits made in place light nothing.
        public var woken: [UUID]

        /// Whether one of `pushes` lit the screen.
        public func wasWoken(byAnyOf pushes: some Sequence<UUID>) -> Bool {
            !Set(woken).isDisjoint(with: pushes)
        }
    }

    /// What `phone`, having received `pushes` in this order, shows.
    public static func replay(_ pushes: [APNsReceivedPush], on phone: Phone = Phone()) async -> Screen {
        let arrivals = Arrivals(pushes, on: phone)
        let app = AppOnPhone(phone: phone)
        for (push, arrivedAt) in arrivals.delivered { await app.receive(push, at: arrivedAt) }
        return app.screen(after: arrivals)
    }

    /// The app on one phone and its extension, handling the pushes that
    /// reach it one by one: what ``replay(_:on:)`` runs all at once, and a
    /// ``SimulatedPhone`` as each arrives.
    final class AppOnPhone {
        /// The phone; the app's state changes when the user opens it (``SimulatedPhone/openApp(now:)``).
        var phone: Phone
        let center = InMemoryNotificationCenter()
        let handler: RetractionHandler
        let serviceExtension: RetractionServiceExtension
        private(set) var outcomes: [RetractionOutcome] = []
        private(set) var edits: [EditReport] = []
        private(set) var dropped = 0
        private(set) var woken: [UUID] = []
        /// When each background push handed to the app arrived, for its budget.
        private var handed: [Date] = []

        /// - Parameter catchUp: the device feed: the extension reads it on each
        ///   push it handles, the app on a background push that says the rest
        ///   of what to remove is there.
        init(phone: Phone, catchUp: RetractionServiceExtension.FeedCatchUp? = nil) {
            self.phone = phone
            // The app and its extension share the app group's tombstones.
            let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
            // The app reads the feed when a background push says the rest is there.
            handler = RetractionHandler(center: center, tombstones: tombstones, catchUp: catchUp)
            serviceExtension = RetractionServiceExtension(
                center: center, tombstones: tombstones, hasFilteringEntitlement: phone.serviceExtension == .filtering,
                catchUp: catchUp)
        }

        /// Does what iOS and the app do with `push`, arriving at `arrivedAt`,
        /// on the caller's actor.
        func receive(_ push: APNsReceivedPush, at arrivedAt: Date, isolation: isolated (any Actor)? = #isolation) async {
            let userInfo = push.userInfo
            if push.pushType == "background" {
                let lastHour = handed.filter { arrivedAt.timeIntervalSince($0) < 3600 }.count
                let overBudget = phone.backgroundBudget.map { lastHour >= $0 } ?? false
                guard phone.appState == .background, !overBudget else {
                    dropped += 1
                    return
                }
                handed.append(arrivedAt)
                let report = await handler.handle(RetractPayload.read(userInfo))
                outcomes.append(report.outcome)
                if let edit = report.edit { edits.append(edit) }
                return
            }
            let identifier = push.collapseID ?? push.apnsID.uuidString
            var (title, text) = APNsSimulatedDevice.alert(of: userInfo)
            var passive = APNsSimulatedDevice.isPassive(userInfo)
            if phone.serviceExtension != .none, APNsSimulatedDevice.isMutable(userInfo) {
                let report = await serviceExtension.handle(identifier: identifier, userInfo: userInfo)
                if let edit = report.retraction.edit { edits.append(edit) }
                switch report.decision {
                // Empty content hides the alert only where the entitlement exists; elsewhere iOS shows it as it came.
                case .suppress where phone.canFilter: return
                case .suppress, .passThrough: break
                // RetractKit's extension makes what it shows in a message's place silent and passive.
                case .replaceBody(let body): (title, text, passive) = (nil, body, true)
                case .showEdit(let newTitle, let body): (title, text, passive) = (newTitle ?? title, body, true)
                }
            }
            if !passive || phone.iOSVersion < .interruptionLevels { woken.append(push.apnsID) }
            center.deliver(DeliveredNotification(identifier: identifier, userInfo: userInfo, title: title, body: text))
        }

        /// What the phone shows now, with what APNs and iOS kept from it in `arrivals`.
        func screen(after arrivals: Arrivals) -> Screen {
            let showing = center.delivered
            return Screen(
                showing: showing,
                texts: Dictionary(showing.map { ($0.identifier, $0.body ?? "") }) { _, last in last },
                titles: Dictionary(showing.compactMap { shown in shown.title.map { (shown.identifier, $0) } }) { _, last in last },
                outcomes: outcomes, edits: edits, dropped: dropped, coalesced: arrivals.coalesced,
                storedAndReplaced: arrivals.storedAndReplaced,
                stored: arrivals.stored, woken: woken)
        }
    }

    fileprivate static func isMutable(_ userInfo: [AnyHashable: Any]) -> Bool {
        ((userInfo["aps"] as? [String: Any])?["mutable-content"] as? NSNumber)?.intValue == 1
    }

    /// Whether an alert asks to be passive: listed, without lighting the screen or a sound (iOS 15).
    fileprivate static func isPassive(_ userInfo: [AnyHashable: Any]) -> Bool {
        (userInfo["aps"] as? [String: Any])?["interruption-level"] as? String == "passive"
    }

    /// An alert's title, if it has one, and body: `aps.alert` as a string,
    /// or its `title` and `body`.
    fileprivate static func alert(of userInfo: [AnyHashable: Any]) -> (title: String?, body: String) {
        let alert = (userInfo["aps"] as? [String: Any])?["alert"]
        if let text = alert as? String { return (nil, text) }
        let fields = alert as? [String: Any]
        return (fields?["title"] as? String, fields?["body"] as? String ?? "")
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
