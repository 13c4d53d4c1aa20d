import Foundation
import NIOConcurrencyHelpers

/// The device feed's share of this process while its workers send a
/// retraction. Phones read the feed on every push, and anyone holding an
/// app's public `client` key can read it in a loop: at full speed its calls
/// take the cores the workers need. So while a lane of this process has a
/// retraction's items in hand (or had one within ``quiet``), feed calls go
/// through at most ``perSecond`` a second, each waiting for its turn (a
/// tenth of a second's worth may go at once); a call whose turn is more than
/// ``longestWait`` away is answered 503 with `Retry-After`, and a phone
/// asks again at its next push. The rest of the time, and in a process that
/// does not send (`--mode api`), the feed is not paced.
final class FeedPacing: Sendable {
    /// Feed calls a second while sending; 0 for no pacing.
    let perSecond: Int
    private let isSending: @Sendable () -> Bool
    private let bucket = NIOLockedValueBox<TokenBucket?>(nil)

    /// How long a call may wait for its turn.
    static let longestWait: Duration = .seconds(1)
    /// How long after a lane's last item the workers still count as sending:
    /// between two items of a retraction, a lane is claiming the next.
    static let quiet: Duration = .seconds(1)

    init(perSecond: Int, isSending: @escaping @Sendable () -> Bool) {
        self.perSecond = perSecond
        self.isSending = isSending
    }

    /// Waits for the call's turn while the workers send; 503 when that is too far off.
    func admit() async throws {
        guard perSecond > 0, isSending() else { return }
        guard let wait = turn(now: .now) else {
            throw APIProblem(
                .feedPaced,
                "this server is sending a retraction and reads the feed at most \(perSecond) times a second meanwhile; ask again shortly",
                headers: [.retryAfter: "1"])
        }
        if wait > .zero { try await Task.sleep(for: wait) }
    }

    /// How long a call made at `now` waits for its turn; nil when longer than ``longestWait`` (no turn is taken).
    func turn(now: ContinuousClock.Instant) -> Duration? {
        let rate = Double(perSecond)
        let capacity = max(1, rate / 10)
        return bucket.withLockedValue { bucket in
            var taken = bucket ?? TokenBucket(capacity: capacity, now: now)
            defer { bucket = taken }
            return taken.reserve(rate: rate, capacity: capacity, now: now, waitingAtMost: Self.longestWait)
        }
    }
}
