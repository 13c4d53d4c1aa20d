import NIOConcurrencyHelpers
import RetractModel
import RetractStore

/// How fast one app's pushes go through one service: a window of pushes in
/// flight that a ``WindowSizer`` sizes from the answers, between the old
/// fixed window (400) and the process's cap.
final class TransportPacing: Sendable {
    let window: PushWindow
    private let sizer: NIOLockedValueBox<WindowSizer>

    init(floor: Int, cap: Int) {
        let sizer = WindowSizer(floor: floor, cap: cap)
        self.sizer = NIOLockedValueBox(sizer)
        window = PushWindow(size: sizer.size)
    }

    /// A push the service answered `latency` after it was sent. Returns the
    /// window's new size, and whether it grew, when this answer changed it.
    func answered(after latency: Duration) -> (size: Int, grew: Bool)? {
        let now = ContinuousClock.now
        return sizer.withLockedValue { sizer in
            let before = sizer.size
            guard let size = sizer.answered(after: latency, at: now, waits: window.waits) else { return nil }
            // Under the sizer's lock, so two changes reach the window in the order they were decided.
            window.resize(to: size)
            return (size, size > before)
        }
    }
}

/// The pacing of each app and service the process sends through, made on first use.
final class Pacings: Sendable {
    private struct Key: Hashable {
        var app: Int64
        var service: PushService
    }

    private let floor: Int
    private let cap: Int
    private let table = NIOLockedValueBox<[Key: TransportPacing]>([:])

    /// Windows of at least `floor` and at most `cap` pushes each.
    init(floor: Int, cap: Int) {
        self.floor = floor
        self.cap = cap
    }

    func pacing(app: Int64, via service: PushService) -> TransportPacing {
        table.withLockedValue { table in
            let key = Key(app: app, service: service)
            if let known = table[key] { return known }
            let made = TransportPacing(floor: floor, cap: cap)
            table[key] = made
            return made
        }
    }

    /// The largest window now, which sets how many work items are worked at once.
    var largestWindow: Int {
        table.withLockedValue { table in table.values.map(\.window.size).max() ?? min(floor, cap) }
    }
}
