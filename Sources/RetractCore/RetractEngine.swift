import Foundation
import Logging
import Metrics
import RetractKit
import RetractStore

/// Retract's service logic: record deliveries, send originals, start
/// retractions and report on them. ``RetractionWorker`` does the fan-out.
public final class RetractEngine: Sendable {
    public let store: RetractStore
    public let transports: any TransportProvider
    public let settings: EngineSettings
    let window: PushWindow
    let logger: Logger
    let metrics: EngineMetrics

    /// - Parameter metricsFactory: where push outcomes and retraction
    ///   durations are counted (`retract serve` gives its Prometheus registry's).
    public init(
        store: RetractStore,
        transports: any TransportProvider,
        settings: EngineSettings = EngineSettings(),
        logger: Logger = Logger(label: "retract.engine"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        precondition(settings.problem == nil, settings.problem ?? "")
        self.store = store
        self.transports = transports
        self.settings = settings
        self.logger = logger
        metrics = EngineMetrics(factory: metricsFactory)
        window = PushWindow(size: settings.window)
    }

    /// The app named `name`, or ``RetractError/Code/unknownApp``.
    public func app(named name: String) async throws(RetractError) -> App {
        guard let app = try await RetractError.store({ () async throws(StoreError) in try await store.app(named: name) }) else {
            let known = (try? await store.apps().map(\.name).sorted()) ?? []
            let hint = known.isEmpty ? "no app is registered yet (retract apps add)" : "known apps: \(known.joined(separator: ", "))"
            throw RetractError(.unknownApp, "no app named \"\(name)\"; \(hint)")
        }
        return app
    }

    // MARK: - Recording

    /// Records that `reference` reached `tokens` through `service`, in batches.
    ///
    /// - Returns: how many deliveries were new.
    public func record(
        app: App, reference: ReferenceID, tokens: [DeviceToken], sentAt: Date = Date(), via service: PushService = .apns
    ) async throws(RetractError) -> Int {
        // Devices the app could not reach are refused now, not when a retraction fails on them.
        if let problem = app.problem(reaching: service) { throw RetractError(.credentials, problem) }
        var recorded = 0
        // A failure part-way leaves the earlier batches recorded; recording them again changes nothing.
        for start in stride(from: 0, to: tokens.count, by: Self.recordStatement) {
            let batch = tokens[start..<min(start + Self.recordStatement, tokens.count)].map {
                Delivery(appID: app.id, reference: reference, token: $0, sentAt: sentAt, transport: service)
            }
            recorded += try await RetractError.store { () async throws(StoreError) in try await store.record(batch) }
        }
        return recorded
    }

    /// Deliveries per statement when recording.
    static let recordStatement = 10_000

    // MARK: - Retractions

    /// Makes a retraction of `references` for `app`; workers send its pushes.
    ///
    /// - Parameter requireRecorded: when true, references of which no
    ///   delivery was ever recorded are ``RetractError/Code/unknownReference``
    ///   (all of them unknown) rather than a retraction of no devices.
    public func startRetraction(
        app: App,
        references: [ReferenceID],
        requestedBy: String,
        reason: String? = nil,
        dryRun: Bool = false,
        idempotencyKey: String? = nil,
        requireRecorded: Bool = false
    ) async throws(RetractError) -> (retraction: Retraction, unknownReferences: [ReferenceID]) {
        let request = RetractionRequest(
            appID: app.id, references: references, requestedBy: requestedBy, reason: reason, dryRun: dryRun, idempotencyKey: idempotencyKey)
        guard !references.isEmpty else { throw RetractError(.invalidInput, "references: at least one reference") }
        for (index, reference) in references.enumerated() {
            if let problem = Delivery.problem(with: reference) {
                throw RetractError(.invalidInput, "references[\(index)] \"\(reference.rawValue.prefix(80))\": \(problem)")
            }
        }
        var unknown: [ReferenceID] = []
        if requireRecorded {
            let recorded = try await RetractError.store { () async throws(StoreError) in
                try await store.recordedReferences(appID: app.id, among: references)
            }
            unknown = Array(Set(references).subtracting(recorded)).sorted()
            if recorded.isEmpty {
                let names = unknown.map { "\"\($0)\"" }.joined(separator: ", ")
                throw RetractError(.unknownReference, "app \(app.name) has no recorded delivery of \(names)")
            }
        }
        let made = try await RetractError.store { () async throws(StoreError) in try await store.createRetraction(request) }
        logger.info(
            "retraction made",
            metadata: [
                "retraction": "\(made.retraction.id)", "app": "\(app.name)", "devices": "\(made.retraction.counts.total)",
                "replayed": "\(made.replayed)",
            ])
        return (made.retraction, unknown)
    }

    /// A retraction and why its failed devices failed.
    public func status(of id: UUID) async throws(RetractError) -> RetractionStatus {
        let retraction = try await RetractError.store { () async throws(StoreError) in try await store.retraction(id: id) }
        guard let retraction else { throw RetractError(.unknownRetraction, "no retraction \(id.uuidString.lowercased())") }
        let failures = try await RetractError.store { () async throws(StoreError) in try await store.retractionFailures(id: id) }
        return RetractionStatus(retraction: retraction, failures: failures)
    }
}

/// A retraction with the reasons its failed devices failed.
public struct RetractionStatus: Sendable, Hashable {
    public var retraction: Retraction
    /// Devices given up on, by reason.
    public var failures: [String: Int]

    public init(retraction: Retraction, failures: [String: Int]) {
        self.retraction = retraction
        self.failures = failures
    }

    public var isFinished: Bool { retraction.state == .done || retraction.state == .failed }

    /// What the failures suggest about the app's own settings, if anything.
    public var hints: [String] {
        let counts = retraction.counts
        return ConfigurationHint.hints(failures: failures, attempted: counts.sent + counts.dead - counts.skipped + counts.failed)
    }
}
