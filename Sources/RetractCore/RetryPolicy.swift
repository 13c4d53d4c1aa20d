import Foundation
import RetractPush

/// The one retry decision of Retract, for APNs and FCM alike: what a
/// client's ``PushVerdict`` comes to for the engine, and how long to wait
/// before sending a push again (exponential backoff with full jitter,
/// bounded in delay; a `Retry-After` is waited out in full). How long a
/// device is retried at all is the engine's retry budget, counted in time.
/// Pure, so tests drive it with a seeded generator.
package struct RetryPolicy: Hashable, Sendable {
    /// The delay cap before the first retry; it doubles with every attempt.
    package var baseDelay: Duration
    package var maximumDelay: Duration

    package init(baseDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(30)) {
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// What `verdict`, the answer to attempt `attempt` (1 for the first), comes to.
    package func outcome(of verdict: PushVerdict, attempt: Int, using generator: inout some RandomNumberGenerator) -> PushOutcome {
        switch verdict {
        case .delivered: .accepted
        case .tokenDead(let since, let reason): .tokenDead(since: since ?? Date(), reason: reason)
        case .failed(let reason): .failed(reason: reason)
        case .credentialsRefused(let reason): .authenticationFailed(reason: reason)
        case .unreachable(let reason): .unreachable(reason: reason)
        case .retryable(let reason, let retryAfter):
            .retry(after: max(delay(afterAttempt: attempt, using: &generator), .seconds(retryAfter ?? 0)), reason: reason)
        }
    }

    /// A random delay in [0, min(maximumDelay, baseDelay × 2^(attempt-1))].
    package func delay(afterAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let doublings = min(max(attempt - 1, 0), 40)
        let base = Self.nanoseconds(baseDelay)
        let maximum = Self.nanoseconds(maximumDelay)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: Int64(1) << doublings)
        let cap = overflow ? maximum : min(scaled, maximum)
        guard cap > 0 else { return .zero }
        // A uniform fraction from 53 random bits; unlike `random(in:)`, it never
        // asks the generator twice, so any generator gives a delay at once.
        let fraction = Double(generator.next() >> 11) / Double(UInt64(1) << 53)
        return .nanoseconds(min(Int64(fraction * (Double(cap) + 1)), cap))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}
