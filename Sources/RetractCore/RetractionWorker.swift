import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import RetractFCM
import RetractKit
import RetractStore

/// Sends the pushes of queued retractions: claims work items from the
/// ledger's queue, reads each item's devices, sends every device one push
/// with all of its references, and finishes the item with its counts, dead
/// tokens and retries in one transaction.
///
/// Any number of workers, in any number of processes, can share the queue.
/// One that dies leaves its items claimed until their lease ends; another
/// worker then sends them again, so every device gets its push at least once.
public final class RetractionWorker: Sendable {
    private let engine: RetractEngine
    /// Names this worker's claims in the queue, for operators.
    public let name: String
    private let retractions = NIOLockedValueBox<[UUID: Job]>([:])
    /// Retractions this worker stopped: lanes still sending for them stop too.
    private let stopped = NIOLockedValueBox<Set<UUID>>([])
    /// Set by ``stopClaiming()``: lanes finish their item and claim no more.
    private let draining = NIOLockedValueBox(false)

    /// What a work item needs to know of its retraction.
    private struct Job: Sendable {
        var retraction: Retraction
        var app: App
    }

    public init(engine: RetractEngine, name: String = RetractionWorker.defaultName) {
        self.engine = engine
        self.name = name
    }

    /// `host:pid`, unique among running processes.
    public static var defaultName: String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }

    private var store: RetractStore { engine.store }
    private var settings: EngineSettings { engine.settings }
    private var logger: Logger { engine.logger }

    /// Works on the whole queue until ``stopClaiming()`` has been called and
    /// the items in hand are finished, or until the task is cancelled; items
    /// in hand then go back to the queue for another worker. Database errors
    /// are logged and waited out.
    public func run() async {
        await withTaskGroup(of: Void.self) { lanes in
            for _ in 0..<settings.lanes {
                lanes.addTask {
                    while !Task.isCancelled && !self.isDraining {
                        do {
                            try await self.lane(only: nil)
                        } catch {
                            if Task.isCancelled { break }
                            self.logger.warning("worker lane stopped by the database; starting again", metadata: ["error": "\(error)"])
                            try? await Task.sleep(for: .seconds(1))
                        }
                    }
                }
            }
        }
    }

    /// Works on these retractions only, until each is done or failed.
    ///
    /// - Throws: the first database error; the retraction stays queued for
    ///   this or another worker to finish.
    public func finish(_ ids: [UUID]) async throws(RetractError) {
        do {
            try await withThrowingTaskGroup(of: Void.self) { lanes in
                for _ in 0..<settings.lanes {
                    lanes.addTask { try await self.lane(only: ids) }
                }
                try await lanes.waitForAll()
            }
        } catch let error as StoreError {
            throw RetractError(error)
        } catch let error as RetractError {
            throw error
        } catch {
            throw RetractError(.store, "\(error)")
        }
    }

    /// Lets the lanes finish the items they hold, and claim no more: the
    /// first step of a graceful stop.
    public func stopClaiming() {
        let first = draining.withLockedValue { draining in
            defer { draining = true }
            return !draining
        }
        guard first else { return }
        logger.info("worker draining: finishing the items in hand, claiming no more", metadata: ["worker": "\(name)"])
    }

    private var isDraining: Bool { draining.withLockedValue { $0 } }

    /// Claims and works one item at a time. With `only`, returns once those
    /// retractions are finished.
    private func lane(only ids: [UUID]?) async throws(StoreError) {
        while !Task.isCancelled && !isDraining {
            let claimed = try await store.claimWork(worker: name, limit: 1, lease: settings.lease, retractions: ids)
            guard let item = claimed.first else {
                if let ids, try await allFinished(ids) { return }
                try? await Task.sleep(for: settings.idlePoll)
                continue
            }
            try await keepingLease(of: item) { () async throws(StoreError) in try await self.work(item) }
        }
    }

    private func allFinished(_ ids: [UUID]) async throws(StoreError) -> Bool {
        for id in ids {
            guard let retraction = try await store.retraction(id: id) else { continue }
            if retraction.state == .queued || retraction.state == .sending { return false }
        }
        return true
    }

    /// Runs `body` while a side task moves the item's lease on every third
    /// of it. If the claim is lost (the lease lapsed, another worker has the
    /// item), `body` is cancelled: its outcome could not be recorded anyway.
    private func keepingLease(
        of item: ClaimedWorkItem, _ body: @escaping @Sendable () async throws(StoreError) -> Void
    ) async throws(StoreError) {
        let lease = settings.lease
        let store = store
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    while true {
                        try await Task.sleep(for: lease / 3)
                        // A failed extension is tried again at the next third; only a refusal ends the work.
                        if let held = try? await store.extendLease([item], by: lease), held.isEmpty { throw LeaseLost() }
                    }
                }
                // The first to end ends both: the work, or the keeper on a lost lease.
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch is LeaseLost {
            logger.warning("work item taken over by another worker; dropped here", metadata: ["item": "\(item.id)"])
            return
        } catch let error as StoreError where !Task.isCancelled {
            throw error
        } catch {
            // Cancellation, or a database error it caused: below.
        }
        guard Task.isCancelled else { return }
        // The worker is stopping. The item goes back to the queue now rather
        // than when its lease ends, so another worker takes it at once; its
        // devices sent so far may get a second push. (If the item was finished
        // just before, there is nothing left to release.) A task of its own, as
        // this one is cancelled and its queries would be too.
        let released = await Task { try? await store.releaseUnfinished(item) }.value
        logger.info("work item released by a stopping worker", metadata: ["item": "\(item.id)", "released": "\(released ?? false)"])
    }

    private struct LeaseLost: Error {}

    // MARK: - One item

    private func work(_ item: ClaimedWorkItem) async throws(StoreError) {
        // A retraction deleted since takes its items with it (ON DELETE CASCADE).
        guard let job = try await job(for: item.retractionID) else { return }
        var tally: Tally
        switch item.kind {
        case .page(let after, let through):
            let page = try await store.devicePage(
                appID: job.app.id, references: job.retraction.references, after: after, through: through, limit: settings.pageSize,
                countingDeadFrom: job.retraction.createdAt)
            // The rest of the range becomes an item another lane can take now.
            if page.mayHaveMore, let last = page.last {
                guard try await store.splitPage(item, at: last) else { return }
            }
            tally = await send(page.devices, job: job, attempt: 1, isRetry: false)
            tally.counts.dead += page.deadSkipped
        case .push(let device):
            // Marked dead since it was queued (by another retraction, say): not sent again.
            if try await store.deadToken(device.token, appID: job.app.id) != nil {
                tally = Tally()
                tally.counts.dead = 1
                tally.counts.retrying = -1
            } else {
                tally = await send([device], job: job, attempt: item.attempts, isRetry: true)
            }
        }
        // Cancelled mid-send, the tally lacks the devices not reached: finishing
        // would drop them. The item is released instead (keepingLease).
        guard !Task.isCancelled else { return }
        // What was sent before a refusal still counts; the retraction stops in the same transaction.
        let stopReason = tally.stopReason
        if let stopReason { stop(job, because: stopReason) }
        let finished = try await store.finishReporting([
            WorkResult(
                item: item, counts: tally.counts, retries: tally.retries, deadTokens: tally.dead, failures: tally.failures,
                stopReason: stopReason)
        ])
        for duration in finished.completed.values { engine.metrics.retractionCompleted(after: duration) }
    }

    private func job(for id: UUID) async throws(StoreError) -> Job? {
        if let known = retractions.withLockedValue({ $0[id] }) { return known }
        guard let retraction = try await store.retraction(id: id) else { return nil }
        guard let app = try await store.app(id: retraction.appID) else {
            throw StoreError(.notFound, "retraction \(id): its app \(retraction.appID) does not exist")
        }
        let job = Job(retraction: retraction, app: app)
        retractions.withLockedValue { jobs in
            // A long-running worker meets many retractions; what it forgets it reads again.
            if jobs.count >= 1024 { jobs.removeAll() }
            jobs[id] = job
        }
        return job
    }

    /// Stops this worker's lanes sending for the retraction; the item's
    /// finish then fails it in the ledger, dropping its queued work.
    private func stop(_ job: Job, because reason: String) {
        logger.error(
            "retraction stopped", metadata: ["retraction": "\(job.retraction.id)", "app": "\(job.app.name)", "reason": "\(reason)"])
        stopped.withLockedValue { stopped in
            // Only lanes in the middle of a page need it; a long-lived worker forgets old ones.
            if stopped.count >= 1024 { stopped.removeAll() }
            stopped.insert(job.retraction.id)
        }
        retractions.withLockedValue { $0[job.retraction.id] = nil }
    }

    // MARK: - Sending

    /// What sending to some devices came to, as the ledger takes it.
    private struct Tally {
        var counts = RetractionCounts()
        var retries: [PushRetry] = []
        var dead: [DeadToken] = []
        var failures: [String: Int] = [:]
        /// Set when the app's credentials could not be used or were refused:
        /// the retraction stops, and its account says why.
        var stopReason: String?

        /// - Parameter isRetry: the device was a queued retry, counted in `retrying` until now.
        mutating func add(_ outcome: PushOutcome, for device: DeviceReferences, attempt: Int, isRetry: Bool) {
            let settled = isRetry ? -1 : 0
            switch outcome {
            case .accepted:
                counts.sent += 1
                counts.retrying += settled
            case .tokenDead(let since, let reason):
                counts.dead += 1
                counts.retrying += settled
                dead.append(DeadToken(token: device.token, since: since, reason: reason))
            case .retry(let delay, let reason):
                retries.append(PushRetry(device: device, delay: delay, attempts: attempt, lastError: reason))
                counts.retrying += isRetry ? 0 : 1
            case .failed(let reason):
                counts.failed += 1
                counts.retrying += settled
                failures[reason, default: 0] += 1
            case .authenticationFailed(let reason):
                // Not counted: the retraction stops, and its account says why.
                stopReason = "\(device.transport) refused the app's credentials (\(reason)); fix them, then retract again"
            }
        }
    }

    /// Sends to each device through the service its delivery went through.
    private func send(_ devices: [DeviceReferences], job: Job, attempt: Int, isRetry: Bool) async -> Tally {
        var tally = Tally()
        // Made before anything is sent: credentials that cannot be used stop the retraction with nothing counted.
        var transports: [PushService: any PushTransport] = [:]
        for service in Set(devices.map(\.transport)) {
            do {
                transports[service] = try engine.transports.transport(for: job.app, via: service)
            } catch {
                tally.stopReason = error.message
                return tally
            }
        }
        var bodies = BodyCache(builder: PayloadBuilder(dialect: job.app.dialect))
        let refused = NIOLockedValueBox(false)
        let window = engine.window
        let stopped = stopped
        let retractionID = job.retraction.id
        await withTaskGroup(of: (DeviceReferences, PushOutcome).self) { group in
            for device in devices {
                if Task.isCancelled { break }
                let pushes: [OutgoingPush]
                do {
                    pushes = try bodies.bodies(for: device.references, via: device.transport).map {
                        OutgoingPush(token: device.token, body: $0, kind: .retraction)
                    }
                } catch {
                    tally.add(.failed(reason: "payload: \(error)"), for: device, attempt: attempt, isRetry: isRetry)
                    continue
                }
                await window.acquire()
                // After a refusal the rest of the app's pushes would be refused too.
                if refused.withLockedValue({ $0 }) || stopped.withLockedValue({ $0.contains(retractionID) }) {
                    window.release()
                    break
                }
                let transport = transports[device.transport]!
                group.addTask {
                    defer { window.release() }
                    var outcome = PushOutcome.accepted
                    // A device whose references need more than one body gets each; all must be accepted.
                    for push in pushes {
                        outcome = await transport.send(push, attempt: attempt)
                        guard case .accepted = outcome else { break }
                    }
                    if case .authenticationFailed = outcome { refused.withLockedValue { $0 = true } }
                    return (device, outcome)
                }
            }
            for await (device, outcome) in group {
                tally.add(outcome, for: device, attempt: attempt, isRetry: isRetry)
                engine.metrics.count(1, .retraction, outcome: outcome)
            }
        }
        return tally
    }
}

/// Retraction bodies by reference list: the devices of a broadcast mostly
/// share one list, so most pushes reuse one body.
private struct BodyCache {
    let builder: PayloadBuilder
    private var cache: [Key: [ByteBuffer]] = [:]

    init(builder: PayloadBuilder) {
        self.builder = builder
    }

    /// The bodies for `service`: FCM writes the custom data out as a JSON
    /// string, longer than the object, so its bodies are packed smaller.
    mutating func bodies(for references: [ReferenceID], via service: PushService) throws -> [ByteBuffer] {
        let key = Key(references: references, service: service)
        if let cached = cache[key] { return cached }
        let limit = service == .fcm ? FCMMessage.bodyLimit : PayloadBuilder.maximumBodySize
        let made = try builder.retractionBodies(for: references, limit: limit).map { ByteBuffer(bytes: $0) }
        if cache.count < 1024 { cache[key] = made }
        return made
    }

    private struct Key: Hashable {
        var references: [ReferenceID]
        var service: PushService
    }
}
