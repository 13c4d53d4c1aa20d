import Foundation
import RetractKit
import RetractStore

/// How the engine and its workers send: through the app's transport for a
/// service, at most ``EngineSettings/window`` pushes in flight in the
/// process, each answer turned into a ``PushOutcome`` by the one
/// ``RetryPolicy`` and counted in the metrics.
struct PushSender: Sendable {
    let transports: any TransportProvider
    let window: PushWindow
    let policy: RetryPolicy
    let metrics: EngineMetrics

    func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport {
        try transports.transport(for: app, via: service)
    }

    /// Sends `push` once through `transport`, the caller holding its place in
    /// the window; `attempt` (1 for the first) sets the backoff of a retryable answer.
    func send(_ push: OutgoingPush, via transport: any PushTransport, attempt: Int) async -> PushOutcome {
        let verdict = await transport.send(push)
        var random = SystemRandomNumberGenerator()
        return policy.outcome(of: verdict, attempt: attempt, using: &random)
    }
}
