import Foundation

/// How completion webhooks are sent and retried (docs/api.md, "Webhooks").
package struct WebhookSettings: Sendable, Hashable {
    /// Where webhooks may be set to and sent: `--allowed-webhook-host` and
    /// `--allowed-webhook-network`, checked again before every attempt.
    package var destinations: WebhookDestinations
    /// Extra root certificates (PEM) to trust: a private receiver, a test's.
    package var additionalTrustRootsPEM: [String]
    /// How long one POST may take, connecting included.
    package var timeout: Duration
    /// The wait before each retry: a random wait up to 10 s, doubling with
    /// every attempt, at most an hour.
    package var retryPolicy: RetryPolicy
    /// How long a delivery is retried from its first attempt; the last
    /// attempt is at its end, and then it is given up.
    package var retryWindow: Duration
    /// How long a claimed delivery is a worker's: longer than ``timeout``,
    /// so only a dead worker's lapses.
    package var lease: Duration
    /// How often an idle worker looks for due retries when nothing woke it.
    package var poll: Duration

    package init(
        destinations: WebhookDestinations = WebhookDestinations(),
        additionalTrustRootsPEM: [String] = [],
        timeout: Duration = .seconds(10),
        retryPolicy: RetryPolicy = RetryPolicy(baseDelay: .seconds(10), maximumDelay: .seconds(3600)),
        retryWindow: Duration = .seconds(24 * 3600),
        lease: Duration = .seconds(60),
        poll: Duration = .seconds(5)
    ) {
        self.destinations = destinations
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.timeout = timeout
        self.retryPolicy = retryPolicy
        self.retryWindow = retryWindow
        self.lease = lease
        self.poll = poll
    }

    /// What follows a failed attempt `attempt` (1 for the first) of a
    /// delivery first tried at `firstAttempt`: the wait before the next one,
    /// cut to end at the retry window's end, or nil once the window is over.
    package func retryDelay(
        afterAttempt attempt: Int, firstAttempt: Date, now: Date, using generator: inout some RandomNumberGenerator
    ) -> Duration? {
        let left = retryWindow - .seconds(now.timeIntervalSince(firstAttempt))
        guard left > .zero else { return nil }
        return min(retryPolicy.delay(afterAttempt: attempt, using: &generator), left)
    }
}
