import Foundation
import RetractKit
import SimulatorSupport

/// One phone living through a test: it handles each push when it reaches it,
/// by the same rules as ``APNsSimulatedDevice/replay(_:on:)``, which works
/// them out afterwards for all of them at once. What differs is time: its
/// Notification Service Extension can read the device feed
/// (``RetractionServiceExtension/FeedCatchUp``) of a real server, and it
/// reads what the feed holds when the push arrives, not at the end.
///
/// ```swift
/// let phone = SimulatedPhone(deviceToken: token.hex, on: simulator, feed: RetractionFeed(baseURL: api, apiKey: clientKey))
/// // … send, retract, take the phone offline and back …
/// let screen = await phone.settle()
/// ```
///
/// Call ``settle(now:)`` after each step of the test: it handles the pushes
/// that reached the phone since the last call, in the order they arrived,
/// except that a background push to a suspended app waits out its burst
/// window, while alerts after it show at once, as on iOS.
public actor SimulatedPhone {
    private let deviceToken: String
    private let simulator: APNsSimulator
    private let kind: APNsSimulatedDevice.Phone?
    private let app: APNsSimulatedDevice.AppOnPhone
    /// The device feed as the app reads it at launch, with the cursor its extension shares.
    private let catchUp: RetractionServiceExtension.FeedCatchUp?
    /// The pushes handled so far, by apns-id and when the simulator took them.
    private var handled: Set<Handled> = []
    /// What the phone received before it met the simulator, handled first.
    private var before: [APNsReceivedPush]

    private struct Handled: Hashable {
        var apnsID: UUID
        var receivedAt: Date
    }

    /// - Parameters:
    ///   - deviceToken: hex, either case.
    ///   - kind: the kind of phone; nil for the one the simulator's
    ///     ``APNsSimulatorConfiguration/phones`` make it. Either way, when it
    ///     was offline is the simulator's (``APNsSimulator/takeOffline(deviceToken:)``).
    ///   - feed: the device feed the app's extension reads on each push, and
    ///     the app on a background push that says the rest is there
    ///     (`pushNotificationMoreInFeed`), with the token saved as the app
    ///     saves it when it registers; nil reads nothing.
    ///   - before: pushes the phone received before (originals a backend
    ///     sent elsewhere, say), handled at the first ``settle(now:)``
    ///     before anything the simulator took.
    public init(
        deviceToken: String, on simulator: APNsSimulator, kind: APNsSimulatedDevice.Phone? = nil, feed: RetractionFeed? = nil,
        before: [APNsReceivedPush] = []
    ) {
        self.deviceToken = deviceToken
        self.before = before
        self.simulator = simulator
        self.kind = kind
        var catchUp: RetractionServiceExtension.FeedCatchUp?
        if let feed, let token = DeviceToken(hex: deviceToken) {
            let cursor = FeedCursor(storage: InMemoryTombstoneStorage())
            // Cannot fail: in-memory storage.
            try? cursor.save(token: token)
            catchUp = RetractionServiceExtension.FeedCatchUp(feed: feed, cursor: cursor)
        }
        self.catchUp = catchUp
        app = APNsSimulatedDevice.AppOnPhone(phone: kind ?? simulator.phone(of: deviceToken), catchUp: catchUp)
    }

    /// The user opens the app: the pushes that reached the phone are handled
    /// first (``settle(now:)``), then the app, running from now on (a
    /// force-quit one no longer is), reads the device feed from the cursor
    /// it shares with its extension and removes what it names, as an app
    /// does at launch with ``RetractionFeed/catchUp(from:handler:)``.
    /// - Returns: what the phone shows then.
    public func openApp(now: Date? = nil) async -> APNsSimulatedDevice.Screen {
        _ = await settle(now: now)
        if app.phone.appState == .forceQuit { app.phone.appState = .background }
        if let catchUp { _ = try? await catchUp.feed.catchUp(from: catchUp.cursor, handler: app.handler) }
        return await settle(now: now)
    }

    /// The user swipes the notification `identifier` away, or opens it: it
    /// no longer shows. Call ``settle(now:)`` first, so it has arrived.
    public func dismiss(_ identifier: String) {
        app.center.removeDeliveredNotifications(withIdentifiers: [identifier])
    }

    /// Handles the pushes that reached the phone since the last call, and
    /// returns what it shows. A background push to a suspended app waits
    /// out its ``APNsSimulatedDevice/Phone/burstWindow`` first: a later one
    /// within it would take its place.
    /// - Parameter now: the time it is; by default the simulator's clock,
    ///   which timed the pushes (``APNsSimulatorConfiguration/now``).
    public func settle(now: Date? = nil) async -> APNsSimulatedDevice.Screen {
        let now = now ?? simulator.currentTime
        var phone = simulator.phone(of: deviceToken)
        if var kind {
            kind.offline = phone.offline
            phone = kind
        }
        let arrivals = APNsSimulatedDevice.Arrivals(simulator.inbox(for: deviceToken), on: phone)
        let window = phone.appState == .background ? phone.burstWindow ?? 0 : 0
        for push in before { await app.receive(push, at: push.receivedAt) }
        before = []
        for (push, arrivedAt) in arrivals.delivered {
            let key = Handled(apnsID: push.apnsID, receivedAt: push.receivedAt)
            guard !handled.contains(key) else { continue }
            if push.pushType == "background", now.timeIntervalSince(arrivedAt) < window { continue }
            handled.insert(key)
            await app.receive(push, at: arrivedAt)
        }
        return app.screen(after: arrivals)
    }
}
