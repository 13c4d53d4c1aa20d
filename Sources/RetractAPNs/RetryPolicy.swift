import NIOCore

/// How long to wait before sending a push again: exponential backoff with
/// full jitter, bounded in delay. The one backoff of Retract, for APNs and
/// FCM alike; how long a device is retried at all is the engine's retry
/// budget, counted in time. Pure, so tests drive it with a seeded generator.
public struct RetryPolicy: Hashable, Sendable {
    /// The delay cap before the first retry; it doubles with every attempt.
    public var baseDelay: TimeAmount
    public var maximumDelay: TimeAmount

    public init(baseDelay: TimeAmount = .milliseconds(500), maximumDelay: TimeAmount = .seconds(60)) {
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// A random delay in [0, min(maximumDelay, baseDelay × 2^(attempt-1))].
    public func delay(afterAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> TimeAmount {
        let doublings = min(max(attempt - 1, 0), 40)
        let (scaled, overflow) = baseDelay.nanoseconds.multipliedReportingOverflow(by: Int64(1) << doublings)
        let cap = overflow ? maximumDelay.nanoseconds : min(scaled, maximumDelay.nanoseconds)
        guard cap > 0 else { return .zero }
        // A uniform fraction from 53 random bits; unlike `random(in:)`, it never
        // asks the generator twice, so any generator gives a delay at once.
        let fraction = Double(generator.next() >> 11) / Double(UInt64(1) << 53)
        return .nanoseconds(min(Int64(fraction * (Double(cap) + 1)), cap))
    }
}
