import Foundation
import Testing

@testable import RetractServer

/// The per-key token buckets, on a clock the test moves.
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
