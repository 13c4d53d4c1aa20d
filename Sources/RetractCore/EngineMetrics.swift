import CoreMetrics
import Metrics
import NIOConcurrencyHelpers

/// What the engine counts, through swift-metrics:
/// `retract_pushes_total{kind,outcome}`, `retract_retraction_duration_seconds`,
/// `retract_reads_total` and `retract_read_devices_total`.
final class EngineMetrics: Sendable {
    private let factory: any MetricsFactory
    private let pushCounters = NIOLockedValueBox([String: Counter]())
    private let retractionDuration: Timer

    init(factory: any MetricsFactory) {
        self.factory = factory
        retractionDuration = Timer(label: "retract_retraction_duration_seconds", dimensions: [], factory: factory)
        reads = Counter(label: "retract_reads_total", dimensions: [], factory: factory)
        readDevices = Counter(label: "retract_read_devices_total", dimensions: [], factory: factory)
    }

    enum PushKind: String {
        case retraction, original, read
    }

    private let reads: Counter
    private let readDevices: Counter
    private let readsTaken = NIOLockedValueBox(0)

    /// A read was taken, telling `devices` devices:
    /// `retract_reads_total` and `retract_read_devices_total`.
    /// - Returns: how many reads this process took, this one included.
    func countRead(devices: Int) -> Int {
        reads.increment()
        readDevices.increment(by: devices)
        return readsTaken.withLockedValue { taken in
            taken &+= 1
            return taken
        }
    }

    /// Counts `count` pushes of `kind` that came to `outcome`.
    func count(_ count: Int, _ kind: PushKind, outcome: PushOutcome) {
        guard count > 0 else { return }
        let name = Self.name(of: outcome)
        let key = "\(kind.rawValue)/\(name)"
        let counter = pushCounters.withLockedValue { counters in
            if let existing = counters[key] { return existing }
            let made = Counter(label: "retract_pushes_total", dimensions: [("kind", kind.rawValue), ("outcome", name)], factory: factory)
            counters[key] = made
            return made
        }
        counter.increment(by: count)
    }

    /// A retraction went from made to done in `duration`.
    func retractionCompleted(after duration: Duration) {
        retractionDuration.recordNanoseconds(max(duration.nanoseconds, 0))
    }

    static func name(of outcome: PushOutcome) -> String {
        switch outcome {
        case .accepted: "sent"
        case .tokenDead: "dead"
        case .retry: "retry"
        case .unreachable: "unreachable"
        case .failed: "failed"
        case .authenticationFailed: "refused"
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
