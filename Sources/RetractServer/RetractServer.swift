import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus
import RetractCore
import RetractModel
import RetractStore
import ServiceLifecycle
import UnixSignals

/// `retract serve`: the HTTP API and the fan-out workers over one engine,
/// with graceful shutdown. Any number of servers can share one database.
///
/// A service of swift-service-lifecycle: `retract serve` runs it with
/// ``run(gracefulShutdownSignals:)``; the tests put it in a `ServiceGroup`.
package struct RetractServer: Service {
    package let engine: RetractEngine
    package let settings: ServerSettings
    /// The routes registered, for the spec test.
    package let routes = RouteTable()
    let registry: PrometheusCollectorRegistry
    let logger: Logger
    let onListening: @Sendable (Int) async -> Void

    /// - Parameters:
    ///   - registry: where `/metrics` reads from; the engine and the APNs
    ///     clients should count into it too (`retract serve` bootstraps
    ///     swift-metrics with it).
    ///   - onListening: called with the port once the server accepts.
    package init(
        engine: RetractEngine, settings: ServerSettings, registry: PrometheusCollectorRegistry, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        self.engine = engine
        self.settings = settings
        self.registry = registry
        self.logger = logger
        self.onListening = onListening
    }

    /// The Prometheus factory for `registry`, with histogram buckets that fit
    /// what Retract times: requests in milliseconds, retractions in minutes.
    package static func metricsFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["retract_retraction_duration_seconds"] = [
            .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(120),
            .seconds(300), .seconds(600), .seconds(1800), .seconds(3600),
        ]
        return factory
    }

    /// Runs until the surrounding service group shuts down gracefully, or the task is cancelled.
    package func run() async throws {
        try await run(gracefulShutdownSignals: [])
    }

    /// Runs until one of `gracefulShutdownSignals` arrives (or a graceful
    /// shutdown of the surrounding service group), or the task is cancelled.
    package func run(gracefulShutdownSignals: [UnixSignal]) async throws {
        let factory = Self.metricsFactory(registry: registry)
        let health = DatabaseHealth(metricsFactory: factory, logger: logger)
        let limiter = KeyRateLimiter(limits: settings.rateLimits)
        let feedMemory = FeedMemory(store: engine.store, logger: logger)
        let acknowledged = AcknowledgedRetractions(metricsFactory: factory, logger: logger)
        // The workers deliver the completion webhooks too, beside their lanes.
        let webhooks: WebhookSender? = try settings.mode.runsWorkers ? WebhookSender(settings: settings.webhooks, logger: logger) : nil
        let worker = RetractionWorker(engine: engine, webhooks: webhooks)
        // Nothing is claimed before the first ping says the database takes writes (MaintenanceService).
        worker.holdClaiming("the database has not been checked yet")
        let feedPacing = FeedPacing(perSecond: settings.rateLimits.feedCallsWhileSending) { [runsWorkers = settings.mode.runsWorkers] in
            runsWorkers && worker.isSending(orWithin: FeedPacing.quiet)
        }
        let api = RetractAPI(
            engine: engine, settings: settings, health: health, routes: routes, registry: registry, limiter: limiter,
            feedMemory: feedMemory, acknowledged: acknowledged, feedPacing: feedPacing, feedMetrics: FeedMetrics(factory: factory),
            logger: logger)
        let router = Router(context: APIContext.self)
        router.add(middleware: APIRequestMiddleware(routes: routes, metrics: HTTPMetrics(factory: factory)))
        api.register(on: router)
        let streams = ProgressStreams(engine: engine, metricsFactory: factory)
        if settings.mode.servesAPI {
            try Console(engine: engine, settings: settings, health: health, streams: streams, limiter: limiter, logger: logger)
                .register(on: router)
        }
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: "retract"),
            onServerRunning: { [onListening, settings] channel in await onListening(channel.localAddress?.port ?? settings.port) },
            logger: logger
        )
        // Shut down last first: the workers stop claiming at once; the API finishes its
        // requests and stops; the workers finish or release their items; the chores end.
        var services: [any Service] = [
            MaintenanceService(
                store: engine.store, health: health, worker: settings.mode.runsWorkers ? worker : nil, acknowledged: acknowledged,
                settings: settings, metricsFactory: factory, logger: logger),
            CredentialReloadService(engine: engine),
        ]
        // The workers check each webhook against their own list before sending it: without one, every delivery is given up.
        if settings.mode.runsWorkers, settings.webhooks.destinations.allowedHosts.isEmpty,
            let apps = try? await engine.store.webhookCount(),
            apps > 0
        {
            logger.warning(
                "apps have completion webhooks, but --allowed-webhook-host is empty here: this process's workers will give their deliveries up",
                metadata: ["apps": "\(apps)"])
        }
        if settings.mode.runsWorkers { services.append(WorkerService(worker: worker)) }
        services.append(application)
        // Ended before the API drains: an open stream would hold its request, and the drain, for up to a minute.
        if settings.mode.servesAPI { services.append(contentsOf: [streams, feedMemory] as [any Service]) }
        if settings.mode.runsWorkers { services.append(DrainSignal(worker: worker)) }
        var configuration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: gracefulShutdownSignals, logger: logger)
        configuration.maximumGracefulShutdownDuration = settings.drainTimeout
        logger.notice(
            "retract serve starting",
            metadata: ["host": "\(settings.host)", "port": "\(settings.port)", "mode": "\(settings.mode.rawValue)"])
        try await ServiceGroup(configuration: configuration).run()
        logger.notice("retract serve stopped")
    }
}
