import Foundation
import NIOConcurrencyHelpers
import RetractCore
import RetractKit
import RetractModel

/// The workers' queue in memory: what `RetractStore` does in PostgreSQL for
/// a ``RetractionWorker``, kept to the same contract (`WorkQueueContractTests`
/// runs one suite against both), so that the worker's rules are tested in
/// milliseconds. Its clock is passed in: a test moves time on to lapse a
/// lease or run out a wait.
///
/// Not a ledger: no retention, no partitions, no feed; page reads take the
/// first `limit` devices in token order (PostgreSQL's merge may end a page
/// earlier, which the contract allows).
package final class InMemoryWorkQueue: WorkQueue {
    private struct Item {
        var id: Int64
        var retractionID: UUID
        var kind: ClaimedWorkItem.Kind
        var attempts = 0
        var claims = 0
        var claim: UUID?
        var runAfter: Date
        var lastError: String?
        var firstFailedAt: Date?
        var waitingSince: Date?
        var waiting = 0
    }

    private struct State {
        var apps: [Int64: App] = [:]
        var deliveries: [Delivery] = []
        var dead: [Int64: [DeviceToken: DeadToken]] = [:]
        var retractions: [UUID: Retraction] = [:]
        var failures: [UUID: [String: Int]] = [:]
        var items: [Int64: Item] = [:]
        var nextItem: Int64 = 1
        var listeners: [UUID: (wake: @Sendable () -> Void, cancelled: @Sendable (UUID) -> Void)] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let clock: @Sendable () -> Date

    /// - Parameter clock: the queue's time, as PostgreSQL's `now()` is the store's.
    package init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    // MARK: - What a test puts in

    /// Registers `app` (its id as given).
    package func add(_ app: App) {
        state.withLockedValue { $0.apps[app.id] = app }
    }

    /// Registers an app as the ledger would, with the next id.
    package func register(_ registration: AppRegistration) -> App {
        state.withLockedValue { state in
            let app = App(
                id: (state.apps.keys.max() ?? 0) + 1, name: registration.name, topic: registration.topic,
                environment: registration.environment, endpoint: registration.endpoint, dialect: registration.dialect,
                authentication: registration.authentication, fcmServiceAccountPath: registration.fcmServiceAccountPath,
                retractionMode: registration.retractionMode, retractionText: registration.retractionText,
                approvalThreshold: registration.approvalThreshold, approvalWindowMinutes: registration.approvalWindowMinutes,
                createdAt: clock())
            state.apps[app.id] = app
            return app
        }
    }

    package func record(_ deliveries: [Delivery]) {
        state.withLockedValue { $0.deliveries += deliveries }
    }

    package func markDead(_ tokens: [DeadToken], appID: Int64) {
        state.withLockedValue { state in
            for token in tokens where state.dead[appID]?[token.token].map({ token.learnedAt > $0.learnedAt }) ?? true {
                state.dead[appID, default: [:]][token.token] = token
            }
        }
    }

    /// Makes a retraction of `request`, counting its devices, with one page
    /// item for all of them (none for a dry run).
    package func createRetraction(_ request: RetractionRequest) -> Retraction {
        let now = clock()
        var target = request.target
        if case .selector(var selector) = target, selector.sentBefore == nil {
            // As the ledger does: a message sent after the retraction is never taken.
            selector.sentBefore = now
            target = .selector(selector)
        }
        let retraction = state.withLockedValue { state in
            let devices = Set(Self.taken(by: target, appID: request.appID, in: state.deliveries).map(\.token))
            let retraction = Retraction(
                id: UUID(), appID: request.appID, references: target.references, selector: target.selector,
                requestedBy: request.requestedBy, reason: request.reason, dryRun: request.dryRun,
                state: request.dryRun || devices.isEmpty ? .done : .queued, counts: RetractionCounts(total: devices.count),
                pushes: PushesSent(), mode: request.mode, badge: request.badge, text: request.text, createdAt: now,
                finishedAt: request.dryRun || devices.isEmpty ? now : nil, updatedAt: now)
            state.retractions[retraction.id] = retraction
            if retraction.state == .queued { Self.add(&state, retraction.id, .page(after: nil, through: nil), at: now) }
            return retraction
        }
        wakeListeners()
        return retraction
    }

    /// Cancels a retraction as the ledger does (`RetractStore.cancelRetraction`):
    /// its items not in a worker's hands are dropped, those in hand finish.
    ///
    /// - Returns: whether this call cancelled it.
    @discardableResult
    package func cancel(_ id: UUID, by actor: String, reason: String) throws(StoreError) -> Bool {
        let now = clock()
        let cancelled = try state.withLockedValue { state -> Result<Bool, StoreError> in
            guard let retraction = state.retractions[id] else { return .failure(StoreError(.notFound, "no retraction \(id)")) }
            if retraction.dryRun { return .failure(StoreError(.stateConflict, "retraction \(id) is a dry run")) }
            switch retraction.state {
            case .cancelled: return .success(false)
            case .cancelling, .queued, .sending, .awaitingApproval: break
            case .done, .failed, .rejected, .expired:
                return .failure(StoreError(.stateConflict, "retraction \(id) is \(retraction.state.rawValue)"))
            }
            state.items = state.items.filter { $0.value.retractionID != id || ($0.value.claim != nil && $0.value.runAfter > now) }
            if retraction.state == .cancelling {
                // Asked again: what a stopped worker left is dropped, and the cancel ends if that was all.
                Self.endCancelled(&state, id, at: now)
                return .success(false)
            }
            state.retractions[id]?.state = .cancelling
            state.retractions[id]?.cancellation = Retraction.Cancellation(by: actor, reason: reason, at: now)
            Self.endCancelled(&state, id, at: now)
            return .success(true)
        }.get()
        if cancelled { for listener in state.withLockedValue({ Array($0.listeners.values) }) { listener.cancelled(id) } }
        return cancelled
    }

    /// Ends a cancelling retraction left with no items, as `RetractStore.endCancelled` does.
    private static func endCancelled(_ state: inout State, _ id: UUID, at now: Date) {
        guard var retraction = state.retractions[id], retraction.state == .cancelling,
            !state.items.values.contains(where: { $0.retractionID == id })
        else { return }
        let counts = retraction.counts
        retraction.counts.spared = max(counts.total - counts.sent - counts.dead - counts.failed, 0)
        retraction.counts.retrying = 0
        retraction.state = .cancelled
        retraction.finishedAt = now
        retraction.updatedAt = now
        state.retractions[id] = retraction
    }

    /// The devices given up on or failed, by reason, as the account shows them.
    package func failures(of retraction: UUID) -> [String: Int] {
        state.withLockedValue { $0.failures[retraction] ?? [:] }
    }

    /// Items queued for the retraction, claimed or not.
    package func queuedWorkCount(retractionID: UUID) -> Int {
        state.withLockedValue { $0.items.values.filter { $0.retractionID == retractionID }.count }
    }

    // MARK: - The queue

    package func claimWork(worker: String, limit: Int, lease: Duration, retractions: [UUID]?) async throws(StoreError) -> [ClaimedWorkItem]
    {
        let now = clock()
        let claim = UUID()
        return state.withLockedValue { state in
            let due = state.items.values
                .filter { $0.runAfter <= now && (retractions?.contains($0.retractionID) ?? true) }
                .sorted { ($0.runAfter, $0.id) < ($1.runAfter, $1.id) }
                .prefix(limit)
            return due.map { found in
                var item = found
                item.claim = claim
                item.attempts += 1
                item.claims += 1
                item.runAfter = now.addingTimeInterval(lease.inSeconds)
                state.items[item.id] = item
                return ClaimedWorkItem(
                    id: item.id, retractionID: item.retractionID, kind: item.kind, attempts: item.attempts, claim: claim,
                    leaseEnds: item.runAfter, claims: item.claims, lastError: item.lastError, firstFailedAt: item.firstFailedAt,
                    waitingSince: item.waitingSince,
                    retractionCancelled: state.retractions[item.retractionID]?.state.isCancel == true)
            }
            .sorted { $0.id < $1.id }
        }
    }

    @discardableResult
    package func extendLease(_ items: [ClaimedWorkItem], by lease: Duration) async throws(StoreError) -> Set<Int64> {
        let until = clock().addingTimeInterval(lease.inSeconds)
        return state.withLockedValue { state in
            var held: Set<Int64> = []
            for item in items where state.items[item.id]?.claim == item.claim {
                state.items[item.id]?.runAfter = until
                held.insert(item.id)
            }
            return held
        }
    }

    package func splitPage(_ item: ClaimedWorkItem, at token: DeviceToken) async throws(StoreError) -> Bool {
        guard case .page(let after, let through) = item.kind else {
            throw StoreError(.invalidInput, "work item \(item.id) is not a page")
        }
        if let after, token <= after { throw StoreError(.invalidInput, "split point \(token) is not after the page's start \(after)") }
        let now = clock()
        let split = state.withLockedValue { state in
            guard state.items[item.id]?.claim == item.claim else { return false }
            state.items[item.id]?.kind = .page(after: after, through: token)
            // A retraction being cancelled takes no new work: the rest of the page is dropped.
            if state.retractions[item.retractionID]?.state != .cancelling {
                Self.add(&state, item.retractionID, .page(after: token, through: through), at: now)
            }
            return true
        }
        if split { wakeListeners() }
        return split
    }

    @discardableResult
    package func release(_ item: ClaimedWorkItem, _ reason: ReleaseReason) async throws(StoreError) -> Bool {
        let (delay, counted, error, waiting) = reason.effect
        let now = clock()
        let released = state.withLockedValue { state in
            guard var held = state.items[item.id], held.claim == item.claim else { return false }
            if state.retractions[item.retractionID]?.state.isCancel == true {
                state.items[item.id] = nil
                Self.endCancelled(&state, item.retractionID, at: now)
                return true
            }
            held.claim = nil
            held.runAfter = now.addingTimeInterval(max(delay.inSeconds, 0))
            if !counted {
                held.attempts = max(held.attempts - 1, 0)
                held.claims = max(held.claims - 1, 0)
            }
            held.lastError = error
            if let waiting {
                held.waiting = waiting
                held.waitingSince = waiting == 0 ? nil : held.waitingSince ?? now
            }
            state.items[item.id] = held
            return true
        }
        if released { wakeListeners() }
        return released
    }

    @discardableResult
    package func giveUp(_ item: ClaimedWorkItem, of retraction: Retraction, reason: String) async throws(StoreError) -> Int {
        var page = DevicePage(devices: [], last: nil, mayHaveMore: false)
        if case .page(let after, let through) = item.kind {
            page = self.page(of: retraction.target, appID: retraction.appID, after: after, through: through, limit: .max)
        }
        let result = WorkResult.givingUp(
            item, reason: reason, devices: page.devices.count + page.skipped.count, dead: page.skipped.count)
        return try await finishReporting([result]).held.contains(item.id) ? result.counts.failed : 0
    }

    package func finishReporting(_ results: [WorkResult]) async throws(StoreError) -> (held: Set<Int64>, completed: [UUID: Duration]) {
        let now = clock()
        let answer = state.withLockedValue { state in
            var held: Set<Int64> = []
            for result in results where state.items[result.item.id]?.claim == result.item.claim {
                state.items[result.item.id] = nil
                held.insert(result.item.id)
            }
            let appIDs = state.retractions.mapValues(\.appID)
            var finished = FinishedWork(results.filter { held.contains($0.item.id) }, appIDs: appIDs)
            let cancelling = Set(results.map(\.item.retractionID).filter { state.retractions[$0]?.state == .cancelling })
            finished.queueNothing(for: cancelling)
            for (id, retry) in finished.retries {
                let item = Self.add(&state, id, .push(retry.device), at: now.addingTimeInterval(retry.delay.inSeconds))
                state.items[item]?.attempts = retry.attempts
                state.items[item]?.lastError = retry.lastError
                state.items[item]?.firstFailedAt = retry.failingSince
            }
            for (id, remainder) in finished.remainders {
                let item = Self.add(
                    &state, id, .page(after: remainder.after, through: remainder.through),
                    at: now.addingTimeInterval(remainder.delay.inSeconds))
                state.items[item]?.lastError = remainder.reason
                state.items[item]?.waiting = remainder.waiting
                state.items[item]?.waitingSince = remainder.waiting > 0 ? now : nil
            }
            for (id, failures) in finished.failures { state.failures[id, default: [:]].merge(failures, uniquingKeysWith: +) }
            for (appID, tokens) in finished.dead {
                for token in tokens where state.dead[appID]?[token.token].map({ token.learnedAt > $0.learnedAt }) ?? true {
                    state.dead[appID, default: [:]][token.token] = token
                }
            }
            for (id, delta) in finished.counts {
                guard var retraction = state.retractions[id] else { continue }
                let pushes = finished.pushes[id] ?? PushesSent()
                retraction.counts.sent += delta.sent
                retraction.counts.dead += delta.dead
                retraction.counts.failed += delta.failed
                retraction.counts.skipped += delta.skipped
                retraction.counts.retrying = max(retraction.counts.retrying + delta.retrying, 0)
                retraction.pushes.add(pushes)
                if retraction.state == .queued { retraction.state = .sending }
                retraction.startedAt = retraction.startedAt ?? now
                retraction.updatedAt = now
                state.retractions[id] = retraction
            }
            for (id, reason) in finished.stops where [.queued, .sending].contains(state.retractions[id]?.state) {
                state.retractions[id]?.state = .failed
                state.retractions[id]?.failure = reason
                state.retractions[id]?.counts.retrying = 0
                state.retractions[id]?.finishedAt = now
                state.items = state.items.filter { $0.value.retractionID != id }
            }
            var completed: [UUID: Duration] = [:]
            // As the ledger's finish: only the retractions of the items it still held.
            for id in Set(finished.counts.keys) {
                guard var retraction = state.retractions[id], [.queued, .sending].contains(retraction.state),
                    !state.items.values.contains(where: { $0.retractionID == id })
                else { continue }
                retraction.state = .done
                retraction.counts.retrying = 0
                retraction.finishedAt = now
                retraction.updatedAt = now
                state.retractions[id] = retraction
                completed[id] = .milliseconds(Int64((now.timeIntervalSince(retraction.createdAt) * 1000).rounded()))
            }
            for id in cancelling.intersection(finished.counts.keys) { Self.endCancelled(&state, id, at: now) }
            return (held, completed)
        }
        wakeListeners()
        return answer
    }

    package func waitingOutLostConnections<Result>(
        for patience: Duration, _ operation: () async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        try await StoreError.waitingOutLostConnections(for: patience, pause: .milliseconds(100), operation)
    }

    package func listenForWork(
        _ wake: @escaping @Sendable () -> Void, cancelled: @escaping @Sendable (UUID) -> Void
    ) async throws(StoreError) {
        let id = UUID()
        state.withLockedValue { $0.listeners[id] = (wake, cancelled) }
        defer { state.withLockedValue { _ = $0.listeners.removeValue(forKey: id) } }
        wake()
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    // MARK: - What a work item reads

    package func retraction(id: UUID) async throws(StoreError) -> Retraction? {
        state.withLockedValue { state in
            guard var retraction = state.retractions[id] else { return nil }
            let waiting = state.items.values.filter { $0.retractionID == id && $0.waiting > 0 }
            retraction.counts.waiting = waiting.reduce(0) { $0 + $1.waiting }
            retraction.waitingReason = waiting.min { ($0.waitingSince ?? .distantFuture) < ($1.waitingSince ?? .distantFuture) }?.lastError
            return retraction
        }
    }

    package func app(id: Int64) async throws(StoreError) -> App? {
        state.withLockedValue { $0.apps[id] }
    }

    package func devicePage(
        appID: Int64, references: [ReferenceID], after: DeviceToken?, through: DeviceToken?, limit: Int
    ) async throws(StoreError) -> DevicePage {
        page(of: .references(references), appID: appID, after: after, through: through, limit: limit)
    }

    package func devicePage(
        appID: Int64, selector: RetractionSelector, after: DeviceToken?, through: DeviceToken?, limit: Int
    ) async throws(StoreError) -> DevicePage {
        page(of: .selector(selector), appID: appID, after: after, through: through, limit: limit)
    }

    private func page(of target: RetractionTarget, appID: Int64, after: DeviceToken?, through: DeviceToken?, limit: Int) -> DevicePage {
        precondition(limit > 0, "a page holds at least one device")
        return state.withLockedValue { state in
            Self.page(
                Self.taken(by: target, appID: appID, in: state.deliveries), dead: state.dead[appID] ?? [:], after: after,
                through: through, limit: limit)
        }
    }

    package func deadToken(_ token: DeviceToken, appID: Int64) async throws(StoreError) -> DeadToken? {
        state.withLockedValue { $0.dead[appID]?[token] }
    }

    package func supersededReferences(
        appID: Int64, devices: [DeviceReferences], retracted: [ReferenceID]
    ) async throws(StoreError) -> [DeviceToken: Set<ReferenceID>] {
        let retracted = Set(retracted)
        return state.withLockedValue { state in
            var found: [DeviceToken: Set<ReferenceID>] = [:]
            for device in devices {
                let own = state.deliveries.filter { $0.appID == appID && $0.token == device.token }
                for (reference, collapseID) in device.collapseIDs where device.references.contains(reference) {
                    guard let sent = own.filter({ $0.reference == reference }).map(\.sentAt).max() else { continue }
                    let newer = own.contains { $0.collapseID == collapseID && $0.sentAt > sent && !retracted.contains($0.reference) }
                    if newer { found[device.token, default: []].insert(reference) }
                }
            }
            return found
        }
    }

    package func recentRetractions(
        appID: Int64, devices: [DeviceToken], since: Date, excluding retractionID: UUID, listLimit: Int
    ) async throws(StoreError) -> [DeviceToken: [PayloadBuilder.Retracted]] {
        state.withLockedValue { state in
            let earlier = state.retractions.values
                .filter {
                    // As `RetractStore.takesDeliveries`: a cancelled retraction rides along with no other.
                    $0.appID == appID && !$0.dryRun && !$0.state.isCancel && $0.id != retractionID
                        && $0.createdAt >= since
                }
                .sorted { $0.createdAt > $1.createdAt }
            var found: [DeviceToken: [PayloadBuilder.Retracted]] = [:]
            let wanted = Set(devices)
            for retraction in earlier {
                let taken = Self.taken(by: retraction.target, appID: appID, in: state.deliveries).filter { wanted.contains($0.token) }
                for (token, deliveries) in Dictionary(grouping: taken, by: \.token) {
                    let items: [PayloadBuilder.Retracted] =
                        if let selector = retraction.selector, selector.takesWholeThread(createdAt: retraction.createdAt) {
                            [.thread(selector.value)]
                        } else {
                            Set(deliveries.map(\.reference)).sorted().map { .reference($0) }
                        }
                    for item in items where !(found[token]?.contains(item) ?? false) && (found[token]?.count ?? 0) < listLimit {
                        found[token, default: []].append(item)
                    }
                }
            }
            return found
        }
    }

    // MARK: - Inside

    @discardableResult
    private static func add(_ state: inout State, _ retractionID: UUID, _ kind: ClaimedWorkItem.Kind, at due: Date) -> Int64 {
        let id = state.nextItem
        state.nextItem += 1
        state.items[id] = Item(id: id, retractionID: retractionID, kind: kind, runAfter: due)
        return id
    }

    private func wakeListeners() {
        for listener in state.withLockedValue({ Array($0.listeners.values) }) { listener.wake() }
    }

    /// The app's deliveries a target takes.
    private static func taken(by target: RetractionTarget, appID: Int64, in deliveries: [Delivery]) -> [Delivery] {
        switch target {
        case .references(let references):
            let wanted = Set(references)
            return deliveries.filter { $0.appID == appID && wanted.contains($0.reference) }
        case .selector(let selector):
            return deliveries.filter { delivery in
                delivery.appID == appID && delivery.labels[selector.kind] == selector.value
                    && (selector.sentAfter.map { delivery.sentAt >= $0 } ?? true)
                    && (selector.sentBefore.map { delivery.sentAt < $0 } ?? true)
            }
        }
    }

    /// The first `limit` devices of `deliveries` after `after` through
    /// `through`, in token order. A delivery sent no later than its token
    /// was learnt dead is dead; a device with no live delivery is skipped.
    private static func page(
        _ deliveries: [Delivery], dead: [DeviceToken: DeadToken], after: DeviceToken?, through: DeviceToken?, limit: Int
    ) -> DevicePage {
        let inRange = deliveries.filter { delivery in
            (after.map { delivery.token > $0 } ?? true) && (through.map { delivery.token <= $0 } ?? true)
        }
        let byToken = Dictionary(grouping: inRange, by: \.token)
        let tokens = byToken.keys.sorted()
        var page = DevicePage(devices: [], last: nil, mayHaveMore: tokens.count > limit)
        for token in tokens.prefix(limit) {
            page.last = token
            let live = byToken[token]!.filter { delivery in dead[token].map { delivery.sentAt > $0.learnedAt } ?? true }
            guard !live.isEmpty else {
                page.skipped.append(token)
                continue
            }
            var collapseIDs: [ReferenceID: String] = [:]
            for delivery in live.sorted(by: { $0.sentAt < $1.sentAt }) { collapseIDs[delivery.reference] = delivery.collapseID }
            page.devices.append(
                DeviceReferences(
                    token: token, references: Set(live.map(\.reference)).sorted(),
                    transport: live.contains { $0.transport == .apns } ? .apns : .fcm, collapseIDs: collapseIDs))
        }
        return page
    }
}
