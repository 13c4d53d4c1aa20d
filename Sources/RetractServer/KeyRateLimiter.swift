import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// How many requests an API key may make, as every hosted push API limits
/// its callers: a token bucket per key and kind, refilled at the rate and
/// holding ``burstSeconds`` of it. Generous by default: they stop a runaway
/// script or a leaked key from taking the server, not a busy backend.
package struct RateLimits: Hashable, Sendable {
    /// Reads a key may make per second (lists, the audit log, a
    /// retraction's account, console pages); 0 for no limit.
    package var readsPerSecond: Int
    /// Writes a key may make per second (recording, sending, retracting,
    /// registering, console forms); 0 for no limit.
    package var writesPerSecond: Int
    /// How many seconds of its rate a key may spend at once.
    package var burstSeconds: Int
    /// Device feed calls this process answers a second, all keys together,
    /// while its workers send a retraction (``FeedPacing``); 0 for no limit.
    package var feedCallsWhileSending: Int

    /// The feed's calls while sending by default: 100 a second per core. On 2
    /// cores, 200 kept a retraction at 0.84 to 0.98 of its rate alone (4 runs)
    /// where 1,000 kept it at 0.66 to 0.78 (docs/performance.md).
    package static let defaultFeedCallsWhileSending = 100 * ProcessInfo.processInfo.activeProcessorCount

    package init(
        readsPerSecond: Int = 50, writesPerSecond: Int = 1000, burstSeconds: Int = 2,
        feedCallsWhileSending: Int = RateLimits.defaultFeedCallsWhileSending
    ) {
        self.readsPerSecond = readsPerSecond
        self.writesPerSecond = writesPerSecond
        self.burstSeconds = burstSeconds
        self.feedCallsWhileSending = feedCallsWhileSending
    }

    /// No limit at all.
    package static let none = RateLimits(readsPerSecond: 0, writesPerSecond: 0, feedCallsWhileSending: 0)
}

/// A token bucket: `capacity` tokens, refilled at `rate` a second; a request takes one.
struct TokenBucket: Hashable, Sendable {
    private(set) var tokens: Double
    private(set) var updated: ContinuousClock.Instant

    init(capacity: Double, now: ContinuousClock.Instant) {
        tokens = capacity
        updated = now
    }

    /// Takes a token: nil when there was one, else how long until there is.
    mutating func take(rate: Double, capacity: Double, now: ContinuousClock.Instant) -> Duration? {
        refill(rate: rate, capacity: capacity, now: now)
        guard tokens < 1 else {
            tokens -= 1
            return nil
        }
        return .seconds((1 - tokens) / rate)
    }

    /// Takes a token now or in turn: how long until it is the caller's
    /// (zero when there was one), or nil, taking none, when that is longer
    /// than `longest`. Tokens taken ahead leave the bucket below zero.
    mutating func reserve(rate: Double, capacity: Double, now: ContinuousClock.Instant, waitingAtMost longest: Duration) -> Duration? {
        refill(rate: rate, capacity: capacity, now: now)
        let wait: Duration = tokens >= 1 ? .zero : .seconds((1 - tokens) / rate)
        guard wait <= longest else { return nil }
        tokens -= 1
        return wait
    }

    /// Whether it is full at `now`: nothing to remember of it.
    func isFull(rate: Double, capacity: Double, now: ContinuousClock.Instant) -> Bool {
        var copy = self
        copy.refill(rate: rate, capacity: capacity, now: now)
        return copy.tokens >= capacity
    }

    private mutating func refill(rate: Double, capacity: Double, now: ContinuousClock.Instant) {
        let elapsed = max(0, (now - updated) / .seconds(1))
        tokens = min(capacity, tokens + elapsed * rate)
        updated = max(updated, now)
    }
}

/// The buckets of every key this process has seen lately. Per process: a
/// deployment of N servers lets a key make up to N times the rate.
package final class KeyRateLimiter: Sendable {
    /// What a request does, for its limit.
    package enum Kind: Hashable, Sendable {
        case read
        case write
    }

    private struct Bucket: Hashable {
        var key: UUID
        var kind: Kind
    }

    package let limits: RateLimits
    private let buckets = NIOLockedValueBox<[Bucket: TokenBucket]>([:])
    /// Buckets kept before the full ones are forgotten.
    static let pruneAbove = 10_000

    package init(limits: RateLimits) {
        self.limits = limits
    }

    private func rate(_ kind: Kind) -> Int {
        switch kind {
        case .read: limits.readsPerSecond
        case .write: limits.writesPerSecond
        }
    }

    private func capacity(_ kind: Kind) -> Double { Double(rate(kind) * max(limits.burstSeconds, 1)) }

    /// Lets a request of `key` through, or refuses it with 429 and `Retry-After`.
    package func admit(key: UUID, kind: Kind, now: ContinuousClock.Instant = .now) throws(APIProblem) {
        let perSecond = rate(kind)
        guard perSecond > 0 else { return }
        let rate = Double(perSecond)
        let capacity = capacity(kind)
        let wait = buckets.withLockedValue { buckets -> Duration? in
            if buckets.count > Self.pruneAbove {
                buckets = buckets.filter {
                    !$0.value.isFull(rate: Double(self.rate($0.key.kind)), capacity: self.capacity($0.key.kind), now: now)
                }
            }
            let id = Bucket(key: key, kind: kind)
            var bucket = buckets[id] ?? TokenBucket(capacity: capacity, now: now)
            defer { buckets[id] = bucket }
            return bucket.take(rate: rate, capacity: capacity, now: now)
        }
        guard let wait else { return }
        let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
        let what = kind == .read ? "reads" : "writes"
        throw APIProblem(
            .tooManyRequests, "this API key makes more than \(perSecond) \(what) a second; try again in \(seconds) s",
            headers: [.retryAfter: "\(seconds)"])
    }
}
