import Foundation
import Logging
import Metrics
import RetractCore
import RetractModel
import RetractStore
import ServiceLifecycle
import UnixSignals

/// The fan-out workers as a service: on graceful shutdown they stop
/// claiming and finish the items in hand; if the drain timeout cancels
/// them first, the items go back to the queue for another process.
struct WorkerService: Service {
    let worker: RetractionWorker

    func run() async throws {
        await withGracefulShutdownHandler {
            await worker.run()
        } onGracefulShutdown: {
            worker.stopClaiming()
        }
        // Drained before its turn (``DrainSignal`` stops the claiming as the shutdown begins, and idle
        // lanes wake at once): a service that returns before the group tells it to stop has failed,
        // for the group, so it waits for its turn.
        try? await gracefulShutdown()
    }
}

/// Reads the apps' credential files again on SIGHUP, after an operator
/// rotated them (they are also read again when they change, every few seconds).
struct CredentialReloadService: Service {
    let engine: RetractEngine

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in await UnixSignalsSequence(trapping: .sighup) {
                engine.reloadCredentials()
            }
        }
    }
}

/// Tells the workers to stop claiming the moment a graceful shutdown begins,
/// while the API still answers its last requests: the group shuts its
/// services down last first, and this one is last.
struct DrainSignal: Service {
    let worker: RetractionWorker

    func run() async throws {
        try? await gracefulShutdown()
        worker.stopClaiming()
    }
}

/// The server's background chores: a database ping every interval (the
/// API's 503s and `retract_database_up`), the queue depth, cancelled
/// retractions left in the device feed, retractions whose approval window
/// passed, and the hourly retention pass that
/// drops old deliveries and idempotency records.
struct MaintenanceService: Service {
    let store: RetractStore
    let health: DatabaseHealth
    /// The workers, when this process runs them: they claim nothing while the database takes no writes.
    let worker: RetractionWorker?
    let acknowledged: AcknowledgedRetractions
    let settings: ServerSettings
    let logger: Logger
    let queueDepth: Gauge

    init(
        store: RetractStore, health: DatabaseHealth, worker: RetractionWorker?, acknowledged: AcknowledgedRetractions,
        settings: ServerSettings, metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.store = store
        self.health = health
        self.acknowledged = acknowledged
        self.worker = worker
        self.settings = settings
        self.logger = logger
        queueDepth = Gauge(label: "retract_queue_depth", dimensions: [], factory: metricsFactory)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            // Before any chore or claim: whether the database takes writes.
            await ping()
            await withTaskGroup(of: Void.self) { group in
                // Apart from the chores, which wait on the database as long as it takes.
                group.addTask { await pingLoop() }
                group.addTask { await choreLoop() }
            }
        }
    }

    private func ping() async {
        await health.check(store)
        worker?.holdClaiming(health.readOnly)
        // Another server behind the address: what this process acknowledged may be missing there.
        await acknowledged.check(store, serversSeen: health.serversSeen, writable: health.isWritable)
    }

    private func pingLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.healthInterval)
            await ping()
        }
    }

    private func choreLoop() async {
        var lastRetention: ContinuousClock.Instant?
        while !Task.isCancelled {
            // The chores write: not on a database that takes no writes.
            if health.isWritable {
                if let depth = try? await store.queuedWorkCount() { queueDepth.record(depth) }
                // Cancelled retractions a stopped process left in the device feed.
                if let forgotten = try? await store.forgetCancelledInFeed(), !forgotten.isEmpty {
                    logger.info("cancelled retractions taken out of the device feed", metadata: ["retractions": "\(forgotten.count)"])
                }
                // Retractions whose approval window passed.
                if let expired = try? await store.expireUnapproved(), !expired.isEmpty {
                    logger.notice(
                        "retractions expired unapproved", metadata: ["retractions": "\(expired.map(\.uuidString).joined(separator: ","))"])
                }
                if lastRetention.map({ ContinuousClock.now - $0 >= settings.retentionInterval }) ?? true {
                    do {
                        let dropped = try await store.applyRetention()
                        try await store.deleteExpiredConsoleSessions()
                        lastRetention = .now
                        if !dropped.isEmpty { logger.info("retention pass", metadata: ["dropped": "\(dropped.joined(separator: ","))"]) }
                    } catch {
                        if Task.isCancelled { break }
                        logger.warning("retention pass failed; trying again next time", metadata: ["error": "\(error)"])
                    }
                }
            }
            try? await Task.sleep(for: settings.healthInterval)
        }
    }
}
