import Foundation
import RetractKit
import RetractModel
import RetractPush
import RetractStore

/// How the engine and its workers send: through the app's transport for a
/// service, each push holding a place in two windows (its app and service's,
/// sized to the round trip by ``TransportPacing``, and the process's, at most
/// ``EngineSettings/window`` in flight), each answer turned into a
/// ``PushOutcome`` by the one ``RetryPolicy`` and counted in the metrics.
struct PushSender: Sendable {
    let transports: any TransportProvider
    /// The process's cap on pushes in flight, across every app.
    let window: PushWindow
    let pacings: Pacings
    let policy: RetryPolicy
    let metrics: EngineMetrics
    /// Wakes the process's idle lanes; signalled when a window grows, so
    /// more lanes claim work before the doubling is judged.
    let wake = WakeSignal()

    init(transports: any TransportProvider, window: Int, smallestWindow: Int, policy: RetryPolicy, metrics: EngineMetrics) {
        self.transports = transports
        self.window = PushWindow(size: window)
        pacings = Pacings(floor: smallestWindow, cap: window)
        self.policy = policy
        self.metrics = metrics
    }

    func transport(for app: App, via service: PushService) throws(RetractError) -> any PushTransport {
        try transports.transport(for: app, via: service)
    }

    func pacing(for app: App, via service: PushService) -> TransportPacing {
        pacings.pacing(app: app.id, via: service)
    }

    /// Waits for a place in `pacing`'s window, then in the process's.
    func acquire(_ pacing: TransportPacing) async {
        await pacing.window.acquire()
        await window.acquire()
    }

    func release(_ pacing: TransportPacing) {
        window.release()
        pacing.window.release()
    }

    /// Sends `push` once through `transport`, the caller holding its place in
    /// the windows (``acquire(_:)``); `attempt` (1 for the first) sets the
    /// backoff of a retryable answer. How long the service took to answer
    /// sizes `pacing`'s window, and the transport's connections follow it.
    func send(_ push: OutgoingPush, via transport: any PushTransport, pacing: TransportPacing, attempt: Int) async -> PushOutcome {
        let started = ContinuousClock.now
        let verdict = await transport.send(push)
        // Only an answer from the service measures the round trip; a connection that failed at once does not.
        if verdict.cameFromService, let (size, grew) = pacing.answered(after: .now - started) {
            transport.provision(inFlight: size)
            if grew { wake.signal() }
        }
        var random = SystemRandomNumberGenerator()
        return policy.outcome(of: verdict, attempt: attempt, using: &random)
    }
}

extension PushVerdict {
    /// Whether the answer took the service's full round trip: it looked at the push.
    var cameFromService: Bool {
        switch self {
        case .delivered, .tokenDead, .failed: true
        // A 429 or 5xx may be answered before the push is looked at; a lost connection, at any time.
        case .credentialsRefused, .retryable, .unreachable: false
        }
    }
}
