import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import RetractServer

/// The per-key token buckets, and the feed's pacing while sending, on a clock the test moves.
@Suite("Key rate limits")
struct KeyRateLimiterTests {
    @Test func aBucketLetsItsBurstThroughThenOneRequestPerRefill() {
        let start = ContinuousClock.now
        var bucket = TokenBucket(capacity: 4, now: start)
        for _ in 0..<4 { #expect(bucket.take(rate: 2, capacity: 4, now: start) == nil) }
        // Empty: the next token is half a second away at 2 a second.
        #expect(bucket.take(rate: 2, capacity: 4, now: start) == .milliseconds(500))
        #expect(bucket.take(rate: 2, capacity: 4, now: start + .milliseconds(499)) != nil)
        #expect(bucket.take(rate: 2, capacity: 4, now: start + .milliseconds(500)) == nil)
        // It refills to its capacity and no further.
        #expect(bucket.isFull(rate: 2, capacity: 4, now: start + .seconds(10)))
        for _ in 0..<4 { #expect(bucket.take(rate: 2, capacity: 4, now: start + .seconds(10)) == nil) }
        #expect(bucket.take(rate: 2, capacity: 4, now: start + .seconds(10)) != nil)
    }

    @Test func aReservationWaitsItsTurnAndOneTooFarOffTakesNothing() {
        let start = ContinuousClock.now
        var bucket = TokenBucket(capacity: 1, now: start)
        // At 4 a second: the first goes now, the next ones a quarter of a second apart.
        let turns = (0..<5).map { _ in bucket.reserve(rate: 4, capacity: 1, now: start, waitingAtMost: .seconds(1)) }
        #expect(turns == [.zero, .milliseconds(250), .milliseconds(500), .milliseconds(750), .seconds(1)])
        // The sixth would wait 1.25 s: refused, and the bucket is as it was.
        #expect(bucket.reserve(rate: 4, capacity: 1, now: start, waitingAtMost: .seconds(1)) == nil)
        #expect(bucket.reserve(rate: 4, capacity: 1, now: start + .milliseconds(250), waitingAtMost: .seconds(1)) == .seconds(1))
        // Once the turns taken ahead have passed, it fills again, to its capacity only.
        #expect(bucket.reserve(rate: 4, capacity: 1, now: start + .seconds(10), waitingAtMost: .zero) == .zero)
        #expect(bucket.reserve(rate: 4, capacity: 1, now: start + .seconds(10), waitingAtMost: .zero) == nil)
    }

    @Test func theFeedIsPacedOnlyWhileTheWorkersSend() async throws {
        let sending = NIOLockedValueBox(false)
        let pacing = FeedPacing(perSecond: 20) { sending.withLockedValue { $0 } }
        // Not sending: nothing is counted, however many calls come.
        for _ in 0..<1_000 { try await pacing.admit() }
        let start = ContinuousClock.now
        // A tenth of a second's calls go at once, then one each 50 ms, for up to a second.
        let turns = (0..<24).map { _ in pacing.turn(now: start) }
        #expect(turns.prefix(2) == [.zero, .zero])
        let near = { (turn: Duration?, expected: Duration) in turn.map { abs(($0 - expected) / .microseconds(1)) < 1 } == true }
        #expect(near(turns[2], .milliseconds(50)) && near(turns[21], .seconds(1)))
        #expect(turns.suffix(2) == [nil, nil])
        sending.withLockedValue { $0 = true }
        let refused = await #expect(throws: APIProblem.self) { try await pacing.admit() }
        #expect(refused?.kind == .feedPaced && refused?.headers[.retryAfter] == "1")
        // No pacing at all with 0.
        let open = FeedPacing(perSecond: 0) { true }
        for _ in 0..<1_000 { try await open.admit() }
    }

    @Test func eachKeyAndKindHasItsOwnBucketAndZeroMeansNoLimit() throws {
        let limiter = KeyRateLimiter(limits: RateLimits(readsPerSecond: 1, writesPerSecond: 2, burstSeconds: 2))
        let now = ContinuousClock.now
        let (first, second) = (UUID(), UUID())
        for _ in 0..<2 { try limiter.admit(key: first, kind: .read, now: now) }
        let refused = #expect(throws: APIProblem.self) { try limiter.admit(key: first, kind: .read, now: now) }
        #expect(refused?.kind == .tooManyRequests && refused?.headers[.retryAfter] == "1")
        // Writes, and another key, are counted apart.
        for _ in 0..<4 { try limiter.admit(key: first, kind: .write, now: now) }
        #expect(throws: APIProblem.self) { try limiter.admit(key: first, kind: .write, now: now) }
        try limiter.admit(key: second, kind: .read, now: now)
        // A second later the reader has one more.
        try limiter.admit(key: first, kind: .read, now: now + .seconds(1))

        let open = KeyRateLimiter(limits: .none)
        for _ in 0..<10_000 { try open.admit(key: first, kind: .read, now: now) }
    }
}
