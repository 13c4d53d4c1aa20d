import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import RetractKit
import RetractModel

/// Sends the pushes of queued retractions: claims work items from the
/// ledger's queue, reads each item's devices, sends every device one push
/// with all of its references, and finishes the item with its counts, dead
/// tokens and retries in one transaction.
///
/// Any number of workers, in any number of processes, can share the queue.
/// One that dies leaves its items claimed until their lease ends; another
/// worker then sends them again, so every device gets its push at least once.
package final class RetractionWorker: Sendable {
    /// The ledger's queue: `RetractStore` in production.
    private let queue: any WorkQueue
    private let settings: EngineSettings
    /// When an item is given up, and how it goes back to the queue.
    private let rules: ItemRules
    private let logger: Logger
    private let sender: PushSender
    /// Names this worker's claims in the queue, for operators.
    package let name: String
    private let retractions = NIOLockedValueBox<[UUID: Job]>([:])
    /// Retractions stopped by this worker, known from a committed finish:
    /// lanes still sending for them stop and give their items back.
    private let stopped = NIOLockedValueBox<Set<UUID>>([])
    /// Retractions whose cancel was heard from the ledger, and when: lanes
    /// sending for them start no more pushes, and finish their item with
    /// what was sent. A cancel is announced before it holds
    /// (``RetractStore/cancelRetraction(id:by:reason:apps:)``): until it
    /// does, for ``announcementLifetime`` at most, their items go back to
    /// the queue unsent.
    private let cancelled = NIOLockedValueBox<[UUID: ContinuousClock.Instant]>([:])
    /// How long a cancel heard is believed before the ledger says it holds:
    /// longer than a cancel waits for its retraction's row.
    static let announcementLifetime = Duration.seconds(60)
    /// Set by ``stopClaiming()``: lanes finish their item and claim no more.
    private let draining = NIOLockedValueBox(false)
    /// Why the lanes claim nothing for now (the ledger takes no writes), or nil: ``holdClaiming(_:)``.
    private let held = NIOLockedValueBox<String?>(nil)
    /// Wakes idle lanes: the ledger's notifications, this process's own
    /// splits and finishes, and a window that grew (the engine's, shared by
    /// its workers).
    private let wake: WakeSignal
    /// Delivers completion webhooks beside the lanes, when given a sender.
    private let webhooks: WebhookCourier?
    /// Pushes reads beside the lanes: a worker of the engine's ledger.
    private let reads: ReadCourier?
    /// The items the lanes have in hand, and when the last one ended: see ``isSending(orWithin:)``.
    private let activity = NIOLockedValueBox((items: 0, lastEnded: ContinuousClock.Instant?.none))

    /// What a work item needs to know of its retraction.
    private struct Job: Sendable {
        var retraction: Retraction
        var app: App
    }

    /// A worker of the engine's ledger, sending through the engine's windows.
    ///
    /// - Parameter webhooks: what POSTs completion webhooks; without it,
    ///   this worker leaves them to others.
    package convenience init(engine: RetractEngine, name: String = RetractionWorker.defaultName, webhooks: WebhookSender? = nil) {
        self.init(
            queue: engine.store, settings: engine.settings, logger: engine.logger, sender: engine.sender, name: name,
            webhooks: webhooks.map { WebhookCourier(engine: engine, sender: $0, worker: name) }, reads: ReadCourier(engine: engine))
    }

    /// A worker of `queue` with windows of its own, sending through
    /// `transports`, and leaving webhooks to others: the worker as the tests
    /// run it over the in-memory queue.
    package convenience init(
        queue: any WorkQueue, transports: any TransportProvider, settings: EngineSettings = EngineSettings(),
        logger: Logger = Logger(label: "retract.worker"), name: String = RetractionWorker.defaultName
    ) {
        let sender = PushSender(
            transports: transports, window: settings.window, smallestWindow: settings.smallestWindow, policy: settings.retryPolicy,
            metrics: EngineMetrics(factory: MetricsSystem.factory))
        self.init(queue: queue, settings: settings, logger: logger, sender: sender, name: name, webhooks: nil, reads: nil)
    }

    private init(
        queue: any WorkQueue, settings: EngineSettings, logger: Logger, sender: PushSender, name: String, webhooks: WebhookCourier?,
        reads: ReadCourier?
    ) {
        self.queue = queue
        self.settings = settings
        rules = ItemRules(settings)
        self.logger = logger
        self.sender = sender
        wake = sender.wake
        self.name = name
        self.webhooks = webhooks
        self.reads = reads
    }

    /// `host:pid`, unique among running processes.
    package static var defaultName: String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Works on the whole queue until ``stopClaiming()`` has been called and
    /// the items in hand are finished, or until the task is cancelled; items
    /// in hand then go back to the queue for another worker. Database errors
    /// are logged and waited out.
    ///
    /// Idle lanes wake when the ledger notifies new work (LISTEN on one
    /// pooled connection), and look again every ``EngineSettings/idlePoll``
    /// in case a notification was lost.
    package func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listen() }
            if let webhooks {
                group.addTask { await webhooks.run(while: { !self.isDraining }, mayClaim: { self.held.withLockedValue { $0 } == nil }) }
            }
            if let reads {
                group.addTask { await reads.run(while: { !self.isDraining }, mayClaim: { self.held.withLockedValue { $0 } == nil }) }
            }
            await withTaskGroup(of: Void.self) { lanes in
                for index in 0..<settings.lanes {
                    lanes.addTask {
                        while !Task.isCancelled && !self.isDraining {
                            do {
                                try await self.lane(index, only: nil, finished: nil)
                            } catch {
                                if Task.isCancelled { break }
                                self.logger.warning("worker lane stopped by the database; starting again", metadata: ["error": "\(error)"])
                                try? await Task.sleep(for: .seconds(1))
                            }
                        }
                    }
                }
            }
            // The lanes are done (draining, or cancelled): nothing is left to wake.
            group.cancelAll()
        }
    }

    /// Turns the ledger's notifications of new work into wake-ups, listening
    /// again a second after the connection is lost; the lanes poll meanwhile.
    private func listen() async {
        let (wake, cancelled) = (wake, cancelled)
        while !Task.isCancelled {
            do {
                try await queue.listenForWork({ wake.signal() }) { id in
                    cancelled.withLockedValue { cancelled in
                        // Only lanes in the middle of a page need it; a long-lived worker forgets old ones.
                        if cancelled.count >= 1024 { cancelled.removeAll() }
                        // Heard again (the commit's notice, or a cancel asked again): believed a minute from now.
                        cancelled[id] = .now
                    }
                }
                // The notifications ended without an error: listen again, but not in a hot loop.
                try? await Task.sleep(for: .seconds(1))
            } catch {
                logger.warning(
                    "not listening for new work; idle lanes poll until listening again",
                    metadata: ["error": "\(error)", "poll": "\(settings.idlePoll.spoken)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Works on these retractions only, until each is done or failed.
    ///
    /// - Throws: the first database error; the retraction stays queued for
    ///   this or another worker to finish.
    package func finish(_ ids: [UUID]) async throws(RetractError) {
        // Set by the lane that finds them all finished, for the lanes not working now.
        let finished = NIOLockedValueBox(false)
        do {
            try await withThrowingTaskGroup(of: Void.self) { lanes in
                for index in 0..<settings.lanes {
                    lanes.addTask { try await self.lane(index, only: ids, finished: finished) }
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

    /// Holds the claiming while the ledger takes no writes (`reason`: a
    /// standby that the database's address reaches after a failover), and
    /// lets it go on when it does again (nil): a claim there would only fail.
    /// The items in hand finish, or fail and go back, on their own.
    package func holdClaiming(_ reason: String?) {
        let released = held.withLockedValue { held in
            defer { held = reason }
            return held != nil && reason == nil
        }
        if released { wake.signal() }
    }

    /// Lets the lanes finish the items they hold, and claim no more: the
    /// first step of a graceful stop.
    package func stopClaiming() {
        let first = draining.withLockedValue { draining in
            defer { draining = true }
            return !draining
        }
        guard first else { return }
        // Idle lanes see it now, not at their next look.
        wake.signal()
        logger.info("worker draining: finishing the items in hand, claiming no more", metadata: ["worker": "\(name)"])
    }

    private var isDraining: Bool { draining.withLockedValue { $0 } }

    /// Whether a lane of this worker has an item in hand, or had one less
    /// than `quiet` ago: a retraction between two items is still being sent.
    /// The API of the same process gives way to it (`FeedPacing`).
    package func isSending(orWithin quiet: Duration) -> Bool {
        activity.withLockedValue { activity in
            activity.items > 0 || activity.lastEnded.map { ContinuousClock.now - $0 < quiet } == true
        }
    }

    /// How many lanes claim work now: enough pages in hand to keep the
    /// largest window full twice over (a lane's page waits for its slowest
    /// answer, then for the ledger), at least ``fewestLanes``, at most
    /// ``EngineSettings/lanes``. At loopback's round trip that is the fewest;
    /// at Apple's, the window and with it the lanes grow.
    private var workingLanes: Int {
        let pages = (2 * sender.pacings.largestWindow + settings.pageSize - 1) / settings.pageSize
        return min(max(pages, Self.fewestLanes), settings.lanes)
    }

    /// The most of a device's recent earlier retractions read for its pushes:
    /// more than a push body holds.
    static let historyListLimit = 1_000

    /// The lanes that always claim work (fewer if ``EngineSettings/lanes`` says so).
    static let fewestLanes = 4

    /// Claims and works one item at a time; lane `index` only while it is
    /// one of the ``workingLanes``. With `only`, returns once those
    /// retractions are finished: the working lane that finds so sets
    /// `finished`, and the others return on seeing it.
    private func lane(_ index: Int, only ids: [UUID]?, finished: NIOLockedValueBox<Bool>?) async throws(StoreError) {
        while !Task.isCancelled && !isDraining {
            let seen = wake.generation
            if finished?.withLockedValue({ $0 }) == true { return }
            guard index < workingLanes, held.withLockedValue({ $0 }) == nil else {
                await wake.wait(after: seen, atMost: settings.idlePoll)
                continue
            }
            let claimed = try await queue.claimWork(worker: name, limit: 1, lease: settings.lease, retractions: ids)
            guard let item = claimed.first else {
                if let ids, try await allFinished(ids) {
                    finished?.withLockedValue { $0 = true }
                    wake.signal()
                    return
                }
                await wake.wait(after: seen, atMost: settings.idlePoll)
                continue
            }
            activity.withLockedValue { $0.items += 1 }
            await keepingLease(of: item) { () async throws(StoreError) in try await self.work(item) }
            activity.withLockedValue { $0 = (items: $0.items - 1, lastEnded: .now) }
            // An idle lane may be waiting for the last of `ids` to finish.
            if ids != nil { wake.signal() }
        }
    }

    private func allFinished(_ ids: [UUID]) async throws(StoreError) -> Bool {
        for id in ids {
            guard let retraction = try await queue.retraction(id: id) else { continue }
            if !retraction.state.isFinished { return false }
        }
        return true
    }

    /// Runs `body` while a side task moves the item's lease on every third
    /// of it. If the claim is lost (the lease lapsed, another worker has the
    /// item), `body` is cancelled: its outcome could not be recorded anyway.
    /// An item `body` could not finish goes back to the queue: due at once
    /// when the worker stops or the database connection dropped (neither
    /// counts as an attempt), after a backoff when the database refused it.
    private func keepingLease(of item: ClaimedWorkItem, _ body: @escaping @Sendable () async throws(StoreError) -> Void) async {
        let (lease, interval) = (settings.lease, rules.extensionInterval)
        let queue = queue
        var failure: StoreError?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    while true {
                        try await Task.sleep(for: interval)
                        // A failed extension is tried again at the next third; only a refusal ends the work.
                        if let held = try? await queue.extendLease([item], by: lease), held.isEmpty { throw LeaseLost() }
                    }
                }
                // The first to end ends both: the work, or the keeper on a lost lease.
                defer { group.cancelAll() }
                try await group.next()
            }
            // Cancelled, the work returns without finishing the item: it is given back below.
            guard Task.isCancelled else { return }
            failure = nil
        } catch is LeaseLost {
            logger.warning("work item taken over by another worker; dropped here", metadata: ["item": "\(item.id)"])
            return
        } catch let error as StoreError where !Task.isCancelled {
            failure = error
        } catch {
            // Cancellation, or a database error it caused.
            failure = nil
        }
        // A task of its own: this one may be cancelled, and its queries would be too.
        let given = failure
        let released = await Task { await self.giveBack(item, after: given) }.value
        logger.log(
            level: failure == nil ? .info : .warning, "work item given back unfinished",
            metadata: ["item": "\(item.id)", "released": "\(released)", "error": "\(failure?.message ?? "the worker is stopping")"])
    }

    /// Puts an item that could not be finished back in the queue, as
    /// ``ItemRules/giveBack(_:after:draining:)`` says. Its devices sent so
    /// far may get a second push.
    private func giveBack(_ item: ClaimedWorkItem, after failure: StoreError?) async -> Bool {
        switch rules.giveBack(item, after: failure, draining: isDraining) {
        case .release(let reason):
            return (try? await queue.release(item, reason)) ?? false
        case .onceReconnected(let reason, let limit):
            return
                (try? await queue.waitingOutLostConnections(for: limit) { () async throws(StoreError) in
                    try await queue.release(item, reason)
                }) ?? false
        }
    }

    private struct LeaseLost: Error {}

    // MARK: - One item

    private func work(_ item: ClaimedWorkItem) async throws(StoreError) {
        logger.debug("working", metadata: ["item": "\(item.id)", "kind": "\(item.kind)"])
        if item.retractionCancelled {
            // Whatever this worker heard or remembers: the ledger drops it on its release.
            cancelled.withLockedValue { $0[item.retractionID] = $0[item.retractionID] ?? .now }
            try await queue.release(item, .cancelAnnounced)
            return
        }
        // A retraction deleted since takes its items with it (ON DELETE CASCADE).
        guard let job = try await job(for: item.retractionID) else { return }
        if stopped.withLockedValue({ $0.contains(job.retraction.id) }) {
            try await queue.release(item, .stopping)
            return
        }
        if let heard = cancelled.withLockedValue({ $0[job.retraction.id] }) {
            // The release drops the item of a retraction being cancelled; else it comes back in a second.
            if heard.duration(to: .now) < Self.announcementLifetime {
                try await queue.release(item, .cancelAnnounced)
                return
            }
            // Announced long ago, and the claim says it is not cancelling: the cancel did not hold.
            cancelled.withLockedValue { _ = $0.removeValue(forKey: job.retraction.id) }
        }
        if let reason = rules.giveUpReason(for: item, now: Date()) {
            let failed = try await queue.giveUp(item, of: job.retraction, reason: reason)
            logger.error(
                "work item given up",
                metadata: ["item": "\(item.id)", "retraction": "\(job.retraction.id)", "devices": "\(failed)", "reason": "\(reason)"])
            return
        }
        switch item.kind {
        case .page(let after, let through):
            try await workPage(item, after: after, through: through, job: job)
        case .push(let device):
            try await workPush(item, device: device, job: job)
        }
    }

    private func workPage(_ item: ClaimedWorkItem, after: DeviceToken?, through: DeviceToken?, job: Job) async throws(StoreError) {
        logger.debug("reading a page", metadata: ["item": "\(item.id)"])
        let page: DevicePage
        switch job.retraction.target {
        case .references(let references):
            page = try await queue.devicePage(
                appID: job.app.id, references: references, after: after, through: through, limit: settings.pageSize)
        case .selector(let selector):
            page = try await queue.devicePage(
                appID: job.app.id, selector: selector, after: after, through: through, limit: settings.pageSize)
        }
        logger.debug("page read", metadata: ["item": "\(item.id)", "devices": "\(page.devices.count)"])
        // The rest of the range becomes an item another lane can take now.
        let (splitAt, end) = Settlement.split(page, through: through)
        if let splitAt {
            guard try await queue.splitPage(item, at: splitAt) else { return }
            // The rest is due now: an idle lane here takes it without waiting for the ledger's notification.
            wake.signal()
        }
        let sending = await send(try await withHistory(try await superseding(page.devices, job: job), job: job), job: job, attempt: 1)
        // Cancelled mid-send, the outcomes lack the devices not reached: finishing
        // would drop them. The item is given back instead (keepingLease).
        guard !Task.isCancelled else { return }
        try await settle(
            Settlement.page(
                item, after: after, through: end, page: page, sending: sending, retryBudget: settings.retryBudget, now: Date()),
            of: item, job: job)
    }

    private func workPush(_ item: ClaimedWorkItem, device: DeviceReferences, job: Job) async throws(StoreError) {
        // Found dead since the retraction was made (by another retraction, say): not sent again.
        if let dead = try await queue.deadToken(device.token, appID: job.app.id), dead.learnedAt >= job.retraction.createdAt {
            try await settle(Settlement.retryFoundDead(item), of: item, job: job)
            return
        }
        let sending = await send(
            try await withHistory(try await superseding([device], job: job), job: job), job: job, attempt: item.attempts)
        guard !Task.isCancelled else { return }
        try await settle(
            Settlement.push(item, device: device, sending: sending, retryBudget: settings.retryBudget, now: Date()), of: item, job: job)
    }

    /// Does what the settlement says: gives the item back, or finishes it.
    private func settle(_ settlement: Settlement, of item: ClaimedWorkItem, job: Job) async throws(StoreError) {
        switch settlement {
        case .release(let reason): try await queue.release(item, reason)
        case .finish(let result): try await finish(result, job: job)
        }
    }

    /// Finishes the item in one transaction. A retraction with a stop reason
    /// is failed by that transaction, and only once it has committed do this
    /// worker's other lanes stop sending for it: if the commit fails, the
    /// retraction is still live and its other items must be sent whole.
    ///
    /// A lost connection (PostgreSQL restarting) is waited out for as long as
    /// the claim lasts, and the same finish tried again: what was sent is not
    /// sent twice. Trying again is safe even if the first commit went through,
    /// as a finish applies only to the items its claim still holds.
    private func finish(_ result: WorkResult, job: Job) async throws(StoreError) {
        let item = result.item
        logger.debug("finishing", metadata: ["item": "\(item.id)"])
        let finished = try await queue.waitingOutLostConnections(for: settings.lease) { () async throws(StoreError) in
            try await queue.finishReporting([result])
        }
        logger.debug("finished", metadata: ["item": "\(item.id)", "held": "\(finished.held.contains(item.id))"])
        if let stopReason = result.stopReason {
            // Not held: the claim lapsed, or a first try committed and its answer was lost. The ledger says which.
            let failed = try? await queue.retraction(id: item.retractionID).map { $0.state == .failed }
            if finished.held.contains(item.id) || failed == true { stop(job, because: stopReason) }
        }
        for duration in finished.completed.values { sender.metrics.retractionCompleted(after: duration) }
    }

    private func job(for id: UUID) async throws(StoreError) -> Job? {
        if let known = retractions.withLockedValue({ $0[id] }) { return known }
        guard let retraction = try await queue.retraction(id: id) else { return nil }
        if retraction.state.isCancel {
            // Cancelled before this worker listened, or while it was not: its item is dropped like the rest.
            cancelled.withLockedValue { $0[id] = $0[id] ?? .now }
        }
        guard let app = try await queue.app(id: retraction.appID) else {
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

    /// Stops this worker's lanes sending for a retraction the ledger has failed.
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

    /// `devices` with the references each no longer shows marked
    /// (``DeviceReferences/superseded``), in the modes whose alerts take a
    /// collapse id; as they are in `background` mode.
    private func superseding(_ devices: [DeviceReferences], job: Job) async throws(StoreError) -> [DeviceReferences] {
        guard RetractionPushes.usesCollapseIDs(job.retraction.mode), devices.contains(where: { !$0.collapseIDs.isEmpty }) else {
            return devices
        }
        // A selector names no references: those of the devices in hand are the ones being retracted.
        let retracted =
            job.retraction.selector == nil ? job.retraction.references : Array(Set(devices.flatMap(\.references)))
        let superseded = try await queue.supersededReferences(appID: job.app.id, devices: devices, retracted: retracted)
        guard !superseded.isEmpty else { return devices }
        return devices.map { device in
            var device = device
            device.superseded = superseded[device.token] ?? []
            return device
        }
    }

    /// `devices` with what their recent earlier retractions in the app took
    /// from them, whatever their kind (``DeviceReferences/history``), read
    /// for the page at once, where pushes carry it
    /// (``RetractionPushes/carriesHistory(mode:dialect:)``).
    private func withHistory(_ devices: [DeviceReferences], job: Job) async throws(StoreError) -> [DeviceReferences] {
        // An edit carries its new text only: nothing rides along with it.
        guard settings.historyWindow > .zero, job.retraction.edit == nil,
            RetractionPushes.carriesHistory(mode: job.retraction.mode, dialect: job.app.dialect)
        else { return devices }
        let found = try await queue.recentRetractions(
            appID: job.app.id, devices: devices.map(\.token), since: Date().addingTimeInterval(-settings.historyWindow.inSeconds),
            excluding: job.retraction.id, listLimit: Self.historyListLimit)
        guard !found.isEmpty else { return devices }
        let ownThread = wholeThread(of: job).map(PayloadBuilder.Retracted.thread)
        return devices.map { device in
            var device = device
            let history = found[device.token] ?? []
            // What it takes itself is not repeated (a reference retracted again); kept whole, the
            // array stays the one the devices with the same history share.
            let own = device.references
            let isOwnReference: (ReferenceID) -> Bool =
                own.count > 4 ? { [own = Set(own)] in own.contains($0) } : { own.contains($0) }
            let isOwn: (PayloadBuilder.Retracted) -> Bool = { item in
                switch item {
                case .reference(let reference): isOwnReference(reference)
                case .thread: item == ownThread
                }
            }
            device.history = history.contains(where: isOwn) ? history.filter { !isOwn($0) } : history
            return device
        }
    }

    /// The thread a retraction takes whole (``RetractionSelector/takesWholeThread(createdAt:)``),
    /// whose id its pushes carry instead of references.
    private func wholeThread(of job: Job) -> String? {
        guard let selector = job.retraction.selector, selector.takesWholeThread(createdAt: job.retraction.createdAt) else { return nil }
        return selector.value
    }

    /// Sends to each device through the service its delivery went through.
    /// After a refusal, a push that could not reach its service, or the
    /// retraction's stop, no more pushes start.
    private func send(_ devices: [DeviceReferences], job: Job, attempt: Int) async -> Sending {
        var sending = Sending(count: devices.count)
        var history = Array(repeating: HistoryCarried(), count: devices.count)
        // Made before anything is sent: credentials that cannot be used stop the retraction with nothing counted.
        var transports: [PushService: any PushTransport] = [:]
        var pacings: [PushService: TransportPacing] = [:]
        for service in Set(devices.map(\.transport)) {
            do {
                transports[service] = try sender.transport(for: job.app, via: service)
            } catch {
                sending.stopReason = error.publicMessage
                return sending
            }
            pacings[service] = sender.pacing(for: job.app, via: service)
        }
        // A transport made since (credentials rotated) opens the connections the window needs.
        for (service, transport) in transports { transport.provision(inFlight: pacings[service]!.window.size) }
        var plan = RetractionPushes(
            mode: job.retraction.mode, dialect: job.app.dialect, text: job.retraction.text ?? job.app.retractionText,
            badge: job.retraction.badge, interruption: job.app.carrierInterruption, account: job.retraction.account,
            thread: wholeThread(of: job), edit: job.retraction.edit, editThread: job.retraction.editThread)
        let halted = NIOLockedValueBox(false)
        let sender = sender
        let (stopped, cancelled) = (stopped, cancelled)
        let retractionID = job.retraction.id
        await withTaskGroup(of: (index: Int, outcome: PushOutcome, accepted: Int).self) { group in
            for (index, device) in devices.enumerated() {
                if Task.isCancelled { break }
                let planned: RetractionPushes.DevicePushes
                do {
                    planned = try plan.pushes(for: device, limit: transports[device.transport]!.bodyLimit)
                } catch {
                    sending.devices[index] = Sending.Device(.failed(reason: "payload: \(error)"))
                    continue
                }
                let (pushes, unreached) = (planned.pushes, planned.unreached)
                history[index] = HistoryCarried(carried: planned.historyCarried, leftOut: planned.historyLeftOut)
                guard !pushes.isEmpty else {
                    sending.devices[index] = Sending.Device(
                        .failed(reason: unreached.isEmpty ? RetractionPushes.superseded : RetractionPushes.noCollapseID),
                        history: history[index])
                    continue
                }
                let pacing = pacings[device.transport]!
                await sender.acquire(pacing)
                if halted.withLockedValue({ $0 }) {
                    sender.release(pacing)
                    break
                }
                if stopped.withLockedValue({ $0.contains(retractionID) }) {
                    sender.release(pacing)
                    sending.interruptedByStop = true
                    break
                }
                if cancelled.withLockedValue({ $0[retractionID] != nil }) {
                    sender.release(pacing)
                    sending.interruptedByCancel = true
                    break
                }
                let transport = transports[device.transport]!
                group.addTask {
                    defer { sender.release(pacing) }
                    var outcome = PushOutcome.accepted
                    var accepted = 0
                    // A device whose references need more than one body gets each; all must be accepted.
                    for push in pushes {
                        outcome = await sender.send(push, via: transport, pacing: pacing, attempt: attempt)
                        guard case .accepted = outcome else { break }
                        accepted += 1
                    }
                    // The rest went out; the device still shows what could not be replaced.
                    if case .accepted = outcome, !unreached.isEmpty { outcome = .failed(reason: RetractionPushes.noCollapseID) }
                    switch outcome {
                    // The rest of the app's pushes would be refused, or not reach the service, too.
                    case .authenticationFailed, .unreachable: halted.withLockedValue { $0 = true }
                    default: break
                    }
                    return (index, outcome, accepted)
                }
            }
            for await (index, outcome, accepted) in group {
                sending.devices[index] = Sending.Device(outcome, pushes: accepted, history: history[index])
                sender.metrics.count(1, .retraction, outcome: outcome)
                switch outcome {
                case .authenticationFailed(let reason):
                    sending.stopReason =
                        sending.stopReason
                        ?? "\(devices[index].transport) refused the app's credentials (\(reason)); fix them, then retract again"
                case .unreachable(let reason):
                    sending.unreachable = sending.unreachable ?? reason
                default:
                    break
                }
            }
        }
        return sending
    }
}
