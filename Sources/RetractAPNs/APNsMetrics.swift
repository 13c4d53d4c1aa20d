import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// Counts answers and times them per status, through swift-metrics:
/// `apns_pushes_total{status}` and `apns_push_duration_seconds{status}`.
/// The status is the HTTP status, or the kind of failure when there was none
/// (`timeout`, `connection_lost`, `connect_failed`, ...).
final class APNsMetrics: Sendable {
    private struct Instruments {
        var counter: Counter
        var timer: Timer
    }

    private let instruments = NIOLockedValueBox([String: Instruments]())
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func record(_ result: Result<APNsResponse, APNsError>, duration: TimeAmount) {
        let status = Self.status(of: result)
        let instruments = instruments.withLockedValue { cache in
            if let existing = cache[status] { return existing }
            let dimensions = [("status", status)]
            let created = Instruments(
                counter: Counter(label: "apns_pushes_total", dimensions: dimensions, factory: factory),
                timer: Timer(label: "apns_push_duration_seconds", dimensions: dimensions, factory: factory)
            )
            cache[status] = created
            return created
        }
        instruments.counter.increment()
        instruments.timer.recordNanoseconds(duration.nanoseconds)
    }

    static func status(of result: Result<APNsResponse, APNsError>) -> String {
        switch result {
        case .success: "200"
        case .failure(.rejected(let rejection)): String(rejection.status)
        case .failure(.timedOut): "timeout"
        case .failure(.connectionLost): "connection_lost"
        case .failure(.connectFailed): "connect_failed"
        case .failure(.invalidRequest): "invalid_request"
        case .failure(.authenticationUnavailable): "authentication_unavailable"
        case .failure(.clientShutdown): "client_shutdown"
        }
    }
}
