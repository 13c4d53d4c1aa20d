import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// What a ``RetractionWorker`` relies on its queue for, checked against the
/// ledger in PostgreSQL and the in-memory queue alike: the worker's tests
/// that run on the in-memory one hold for the ledger because both keep this.
@Suite("The work queue's contract")
struct WorkQueueContractTests {
    enum Queue: String, CaseIterable, CustomTestStringConvertible {
        case memory, ledger
        var testDescription: String { rawValue }
    }

    static func with(_ queue: Queue, _ body: (any SeedableWorkQueue) async throws -> Void) async throws {
        switch queue {
        case .memory: try await body(InMemoryWorkQueue())
        case .ledger: try await TestDatabase.withStore { store, _ in try await body(store) }
        }
    }

    static func token(_ number: Int) -> DeviceToken { TestTokens.token(number) }

    /// An app with `references` each sent to `tokens`, and a retraction of them.
    static func retraction(
        _ queue: any SeedableWorkQueue, references: [ReferenceID] = ["m1"], tokens: [Int] = [1, 2, 3], at sentAt: Date = Date()
    ) async throws -> (App, Retraction) {
        let app = try await queue.seedApp("chat")
        try await queue.seed(
            references.flatMap { reference in tokens.map { Delivery(appID: app.id, reference: reference, token: token($0), sentAt: sentAt) }
            })
        let retraction = try await queue.seedRetraction(
            RetractionRequest(appID: app.id, target: .references(references), requestedBy: "tests"))
        return (app, retraction)
    }

    static func claim(
        _ queue: any SeedableWorkQueue, by worker: String = "w1", lease: Duration = .seconds(60)
    ) async throws -> [ClaimedWorkItem] {
        try await queue.claimWork(worker: worker, limit: 10, lease: lease, retractions: nil)
    }

    @Test(arguments: Queue.allCases)
    func aClaimIsOneWorkersUntilItsLeaseLapses(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (_, retraction) = try await Self.retraction(queue)
            let first = try await Self.claim(queue, lease: .milliseconds(300))
            #expect(first.count == 1)
            #expect(first.first?.retractionID == retraction.id)
            #expect(first.first?.kind == .page(after: nil, through: nil))
            #expect(first.first?.attempts == 1 && first.first?.claims == 1)
            #expect(try await Self.claim(queue, by: "w2").isEmpty)
            #expect(try await queue.extendLease(first, by: .milliseconds(300)) == Set(first.map(\.id)))
            try await Task.sleep(for: .milliseconds(450))
            let taken = try await Self.claim(queue, by: "w2")
            #expect(taken.map(\.id) == first.map(\.id))
            #expect(taken.first?.claims == 2)
            // The first claim is gone: it can neither extend, nor finish.
            #expect(try await queue.extendLease(first, by: .seconds(60)).isEmpty)
            let late = try await queue.finishReporting(first.map { WorkResult(item: $0, counts: RetractionCounts(sent: 3)) })
            #expect(late.held.isEmpty)
            #expect(try await queue.retraction(id: retraction.id)?.counts.sent == 0)
        }
    }

    @Test(arguments: Queue.allCases)
    func aSplitPageQueuesTheRestDueAtOnce(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            _ = try await Self.retraction(queue)
            let page = try #require(try await Self.claim(queue).first)
            #expect(try await queue.splitPage(page, at: Self.token(2)))
            let rest = try #require(try await Self.claim(queue, by: "w2").first)
            #expect(rest.kind == .page(after: Self.token(2), through: nil))
            var stale = page
            stale.claim = UUID()
            #expect(try await queue.splitPage(stale, at: Self.token(1)) == false)
            await #expect(throws: StoreError.self) { try await queue.splitPage(rest, at: Self.token(1)) }
        }
    }

    /// A stop or a lost connection does not count as an attempt; a failure
    /// does; an unreachable service's devices are counted as waiting, with why.
    @Test(arguments: Queue.allCases)
    func aReleasedItemCountsAnAttemptOnlyWhenItsWorkFailed(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (_, retraction) = try await Self.retraction(queue)
            var item = try #require(try await Self.claim(queue).first)
            #expect(try await queue.release(item, .stopping))
            #expect(try await queue.release(item, .stopping) == false)
            item = try #require(try await Self.claim(queue).first)
            #expect(item.attempts == 1 && item.claims == 1)
            #expect(try await queue.release(item, .failed("the database refused it", retryAfter: .zero)))
            item = try #require(try await Self.claim(queue).first)
            #expect(item.attempts == 2 && item.claims == 2)
            #expect(item.lastError == "the database refused it")
            #expect(try await queue.release(item, .unreachable("cannot connect to APNs", devices: 3, retryAfter: .zero)))
            let waiting = try #require(try await queue.retraction(id: retraction.id))
            #expect(waiting.counts.waiting == 3)
            #expect(waiting.waitingReason == "cannot connect to APNs")
            item = try #require(try await Self.claim(queue).first)
            #expect(item.waitingSince != nil)
            #expect(item.attempts == 2 && item.claims == 2)
            // Worked on, its service answered: the wait is over.
            #expect(try await queue.release(item, .failed("refused", retryAfter: .seconds(60))))
            #expect(try await queue.retraction(id: retraction.id)?.counts.waiting == 0)
            #expect(try await Self.claim(queue).isEmpty)
        }
    }

    /// A finish adds its counts, queues its retries as items of their own,
    /// and the last finish of a retraction makes it done.
    @Test(arguments: Queue.allCases)
    func finishesAddUpAndTheLastMakesTheRetractionDone(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (app, retraction) = try await Self.retraction(queue)
            let page = try #require(try await Self.claim(queue).first)
            let devices = try await queue.devicePage(appID: app.id, references: ["m1"], after: nil, through: nil, limit: 100).devices
            #expect(devices.map(\.token) == [1, 2, 3].map(Self.token))
            let since = Date()
            let retry = PushRetry(device: devices[2], delay: .zero, attempts: 1, lastError: "TooManyRequests", failingSince: since)
            let first = try await queue.finishReporting([
                WorkResult(
                    item: page, counts: RetractionCounts(sent: 2, retrying: 1), pushes: PushesSent(total: 2, mostToOneDevice: 1),
                    retries: [retry])
            ])
            #expect(first.held == [page.id])
            #expect(first.completed.isEmpty)
            let sending = try #require(try await queue.retraction(id: retraction.id))
            #expect(sending.state == .sending)
            #expect(sending.counts.sent == 2 && sending.counts.retrying == 1)
            #expect(sending.pushes.total == 2)
            let push = try #require(try await Self.claim(queue).first)
            #expect(push.kind == .push(devices[2]))
            #expect(push.attempts == 2)
            #expect(push.lastError == "TooManyRequests")
            #expect(push.firstFailedAt.map { abs($0.timeIntervalSince(since)) < 0.01 } == true)
            let last = try await queue.finishReporting([WorkResult(item: push, counts: RetractionCounts(sent: 1, retrying: -1))])
            #expect(last.completed.keys.contains(retraction.id))
            let done = try #require(try await queue.retraction(id: retraction.id))
            #expect(done.state == .done)
            #expect(done.counts.sent == 3 && done.counts.retrying == 0)
            #expect(done.finishedAt != nil)
        }
    }

    /// A page's devices that could not reach their service wait as pages of
    /// their own, counted as waiting until they are worked.
    @Test(arguments: Queue.allCases)
    func aRemainderIsQueuedAsAPageThatWaits(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (_, retraction) = try await Self.retraction(queue)
            let page = try #require(try await Self.claim(queue).first)
            let remainder = PageRemainder(after: Self.token(1), through: nil, waiting: 2, delay: .zero, reason: "cannot connect")
            _ = try await queue.finishReporting([WorkResult(item: page, counts: RetractionCounts(sent: 1), remainders: [remainder])])
            let waiting = try #require(try await queue.retraction(id: retraction.id))
            #expect(waiting.state == .sending)
            #expect(waiting.counts.waiting == 2)
            #expect(waiting.waitingReason == "cannot connect")
            let rest = try #require(try await Self.claim(queue).first)
            #expect(rest.kind == .page(after: Self.token(1), through: nil))
            #expect(rest.waitingSince != nil)
        }
    }

    @Test(arguments: Queue.allCases)
    func aStopFailsTheRetractionAndDropsItsOtherWork(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (_, retraction) = try await Self.retraction(queue)
            let page = try #require(try await Self.claim(queue).first)
            #expect(try await queue.splitPage(page, at: Self.token(1)))
            let finished = try await queue.finishReporting([
                WorkResult(item: page, counts: RetractionCounts(sent: 1), stopReason: "apns refused the app's credentials")
            ])
            #expect(finished.held == [page.id])
            let failed = try #require(try await queue.retraction(id: retraction.id))
            #expect(failed.state == .failed)
            #expect(failed.failure == "apns refused the app's credentials")
            #expect(failed.counts.sent == 1)
            #expect(try await Self.claim(queue).isEmpty)
        }
    }

    /// A cancel drops the work no worker holds; the pages in hand finish
    /// with their counts, but what they would queue next (the rest of a
    /// split, retries) is dropped, and the last to end makes the retraction
    /// `cancelled` with the devices not reached spared.
    @Test(arguments: Queue.allCases)
    func aCancelDropsTheQueuedWorkAndTheLastItemInHandEndsIt(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (app, retraction) = try await Self.retraction(queue, tokens: [1, 2, 3, 4, 5, 6, 7, 8])
            let page = try #require(try await Self.claim(queue).first)
            #expect(try await queue.splitPage(page, at: Self.token(3)))
            let rest = try #require(try await Self.claim(queue, by: "w2").first)
            #expect(try await queue.splitPage(rest, at: Self.token(6)))
            // Devices 7 and 8 wait in a page no one holds: the cancel drops it.
            #expect(try await queue.seedCancel(retraction.id, by: "moderator", reason: "wrong campaign"))
            #expect(try await queue.seedCancel(retraction.id, by: "someone else", reason: "again") == false)
            let cancelling = try #require(try await queue.retraction(id: retraction.id))
            #expect(cancelling.state == .cancelling)
            #expect(cancelling.cancellation?.by == "moderator" && cancelling.cancellation?.reason == "wrong campaign")
            #expect(try await Self.claim(queue, by: "w3").isEmpty)

            // The second page in hand splits again: its rest (device 6) is dropped, not queued.
            #expect(try await queue.splitPage(rest, at: Self.token(5)))
            #expect(try await Self.claim(queue, by: "w3").isEmpty)
            // The first finishes with a retry: not queued either.
            let devices = try await queue.devicePage(
                appID: app.id, references: ["m1"], after: nil, through: Self.token(3), limit: 100
            ).devices
            let retry = PushRetry(device: devices[2], delay: .zero, attempts: 1, lastError: "TooManyRequests", failingSince: Date())
            let first = try await queue.finishReporting([
                WorkResult(item: page, counts: RetractionCounts(sent: 2, retrying: 1), retries: [retry])
            ])
            #expect(first.held == [page.id])
            #expect(first.completed.isEmpty)
            #expect(try await queue.retraction(id: retraction.id)?.state == .cancelling)
            #expect(try await Self.claim(queue, by: "w3").isEmpty)
            // The second is given back (its worker stopped): dropped, and it was the last.
            #expect(try await queue.release(rest, .stopping))
            let cancelled = try #require(try await queue.retraction(id: retraction.id))
            #expect(cancelled.state == .cancelled)
            #expect(cancelled.counts.sent == 2 && cancelled.counts.retrying == 0)
            #expect(cancelled.counts.spared == 6)
            #expect(cancelled.counts.isSettled && cancelled.counts.pending == 0)
            #expect(cancelled.finishedAt != nil)
            #expect(try await Self.claim(queue, by: "w3").isEmpty)
        }
    }

    /// An item of a cancelled retraction that a worker stopped with (its
    /// lease lapsed after the cancel) says so when claimed again, and its
    /// release drops it and ends the cancel; asking again ends one whose
    /// lapsed item no worker claims.
    @Test(arguments: Queue.allCases)
    func anItemOfACancelledRetractionIsFlaggedWhenClaimedAndDroppedByItsRelease(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (app, retraction) = try await Self.retraction(queue, tokens: [1, 2, 3, 4])
            let page = try #require(try await Self.claim(queue, lease: .milliseconds(300)).first)
            #expect(page.retractionCancelled == false)
            #expect(try await queue.seedCancel(retraction.id, by: "moderator", reason: "wrong campaign"))
            #expect(try await queue.retraction(id: retraction.id)?.state == .cancelling)
            try await Task.sleep(for: .milliseconds(450))
            let again = try #require(try await Self.claim(queue, by: "w2").first)
            #expect(again.id == page.id && again.retractionCancelled)
            #expect(try await queue.release(again, .cancelAnnounced))
            let cancelled = try #require(try await queue.retraction(id: retraction.id))
            #expect(cancelled.state == .cancelled && cancelled.counts.spared == 4)
            #expect(try await Self.claim(queue, by: "w3").isEmpty)

            // Another, whose stopped worker's item lapses and is claimed by no one: cancelled again, it ends.
            try await queue.seed([5, 6].map { Delivery(appID: app.id, reference: "m2", token: Self.token($0), sentAt: Date()) })
            let second = try await queue.seedRetraction(
                RetractionRequest(appID: app.id, target: .references(["m2"]), requestedBy: "tests"))
            let held = try #require(try await Self.claim(queue, lease: .milliseconds(300)).first)
            #expect(held.retractionID == second.id)
            #expect(try await queue.seedCancel(second.id, by: "moderator", reason: "wrong message"))
            try await Task.sleep(for: .milliseconds(450))
            #expect(try await queue.seedCancel(second.id, by: "moderator", reason: "again") == false)
            let ended = try #require(try await queue.retraction(id: second.id))
            #expect(ended.state == .cancelled && ended.counts.spared == 2)
            #expect(ended.cancellation?.reason == "wrong message")
        }
    }

    /// With nothing in a worker's hands, a cancel ends the retraction at
    /// once; one that ended cannot be cancelled.
    @Test(arguments: Queue.allCases)
    func aCancelWithNothingInHandEndsAtOnceAndAnEndedRetractionIsNotCancelled(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (app, retraction) = try await Self.retraction(queue)
            #expect(try await queue.seedCancel(retraction.id, by: "moderator", reason: "wrong reference"))
            let cancelled = try #require(try await queue.retraction(id: retraction.id))
            #expect(cancelled.state == .cancelled)
            #expect(cancelled.counts.spared == 3 && cancelled.counts.sent == 0)
            #expect(try await Self.claim(queue).isEmpty)

            try await queue.seed([Delivery(appID: app.id, reference: "m2", token: Self.token(1), sentAt: Date())])
            let other = try await queue.seedRetraction(RetractionRequest(appID: app.id, target: .references(["m2"]), requestedBy: "tests"))
            let page = try #require(try await Self.claim(queue).first)
            _ = try await queue.finishReporting([WorkResult(item: page, counts: RetractionCounts(sent: 1))])
            #expect(try await queue.retraction(id: other.id)?.state == .done)
            await #expect {
                _ = try await queue.seedCancel(other.id, by: "moderator", reason: "too late")
            } throws: { ($0 as? StoreError)?.code == .stateConflict }
        }
    }

    /// Pages read one after another cover every device once, each with all
    /// of its references, and skip those whose every delivery is dead.
    @Test(arguments: Queue.allCases)
    func pagesCoverEveryDeviceOnceWithAllItsReferences(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let app = try await queue.seedApp("chat")
            let sent = Date().addingTimeInterval(-60)
            try await queue.seed(
                (1...7).map { Delivery(appID: app.id, reference: "m1", token: Self.token($0), sentAt: sent) }
                    + (4...9).map { Delivery(appID: app.id, reference: "m2", token: Self.token($0), sentAt: sent) })
            // Token 5 died after both were sent; token 8 died before, and m2 came later: the app registered it again.
            try await queue.seedDead(
                [
                    DeadToken(token: Self.token(5), since: sent, reason: "Unregistered", learnedAt: sent.addingTimeInterval(10)),
                    DeadToken(token: Self.token(8), since: sent, reason: "Unregistered", learnedAt: sent.addingTimeInterval(-10)),
                ], appID: app.id)
            var seen: [DeviceToken: [ReferenceID]] = [:]
            var skipped: [DeviceToken] = []
            var after: DeviceToken?
            var reads = 0
            while reads < 20 {
                reads += 1
                let page = try await queue.devicePage(appID: app.id, references: ["m1", "m2"], after: after, through: nil, limit: 3)
                #expect(page.devices.count + page.skipped.count <= 3)
                for device in page.devices {
                    #expect(seen[device.token] == nil, "\(device.token) read twice")
                    seen[device.token] = device.references
                }
                skipped += page.skipped
                guard page.mayHaveMore, let last = page.last else { break }
                after = last
            }
            #expect(Set(seen.keys) == Set([1, 2, 3, 4, 6, 7, 8, 9].map(Self.token)))
            #expect(seen[Self.token(4)] == ["m1", "m2"])
            #expect(seen[Self.token(9)] == ["m2"])
            #expect(skipped == [Self.token(5)])
            #expect(try await queue.deadToken(Self.token(5), appID: app.id)?.reason == "Unregistered")
            #expect(try await queue.deadToken(Self.token(1), appID: app.id) == nil)
            let bounded = try await queue.devicePage(
                appID: app.id, references: ["m1"], after: Self.token(2), through: Self.token(4), limit: 100)
            #expect(bounded.devices.map(\.token) == [3, 4].map(Self.token))
            #expect(bounded.mayHaveMore == false)
        }
    }

    @Test(arguments: Queue.allCases)
    func aSelectorsPageTakesItsLabelWithinItsRange(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let app = try await queue.seedApp("chat")
            let now = Date()
            func sent(_ reference: ReferenceID, to token: Int, thread: String, at date: Date) -> Delivery {
                Delivery(
                    appID: app.id, reference: reference, token: Self.token(token), sentAt: date, labels: DeliveryLabels(thread: thread))
            }
            try await queue.seed([
                sent("m1", to: 1, thread: "c-1", at: now.addingTimeInterval(-300)),
                sent("m2", to: 1, thread: "c-1", at: now.addingTimeInterval(-200)),
                sent("m2", to: 2, thread: "c-1", at: now.addingTimeInterval(-200)),
                sent("m3", to: 3, thread: "c-2", at: now.addingTimeInterval(-200)),
                sent("m4", to: 4, thread: "c-1", at: now.addingTimeInterval(-1000)),
            ])
            let selector = RetractionSelector(
                .thread, "c-1", sentAfter: now.addingTimeInterval(-500), sentBefore: now.addingTimeInterval(1))
            let page = try await queue.devicePage(appID: app.id, selector: selector, after: nil, through: nil, limit: 100)
            #expect(page.devices.map(\.token) == [1, 2].map(Self.token))
            #expect(page.devices.first?.references == ["m1", "m2"])
            #expect(page.mayHaveMore == false)
        }
    }

    /// Giving up counts the item's devices as failed (those known dead as
    /// dead and skipped), once: a claim that lapsed gives up nothing.
    @Test(arguments: Queue.allCases)
    func aPageGivenUpCountsItsDevicesFailed(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let (app, retraction) = try await Self.retraction(queue, at: Date().addingTimeInterval(-60))
            try await queue.seedDead([DeadToken(token: Self.token(2), since: Date(), reason: "Unregistered")], appID: app.id)
            let page = try #require(try await Self.claim(queue).first)
            #expect(try await queue.giveUp(page, of: retraction, reason: "given up after 5 attempts") == 2)
            #expect(try await queue.giveUp(page, of: retraction, reason: "given up after 5 attempts") == 0)
            let done = try #require(try await queue.retraction(id: retraction.id))
            #expect(done.state == .done)
            #expect(done.counts == RetractionCounts(total: 3, dead: 1, failed: 2, skipped: 1))
        }
    }

    /// What rides along in a retraction's pushes: the app's recent earlier
    /// retractions of each device, and the references a newer notification
    /// under the same collapse id took the place of.
    @Test(arguments: Queue.allCases)
    func historyAndSupersededReferencesAreReadPerDevice(queue: Queue) async throws {
        try await Self.with(queue) { queue in
            let app = try await queue.seedApp("chat")
            let start = Date().addingTimeInterval(-600)
            try await queue.seed([
                Delivery(appID: app.id, reference: "m1", token: Self.token(1), sentAt: start, collapseID: "chat-7"),
                Delivery(appID: app.id, reference: "m2", token: Self.token(1), sentAt: start.addingTimeInterval(60), collapseID: "chat-7"),
                Delivery(appID: app.id, reference: "m3", token: Self.token(2), sentAt: start),
            ])
            let earlier = try await queue.seedRetraction(
                RetractionRequest(appID: app.id, target: .references(["m3"]), requestedBy: "tests"))
            _ = try await queue.seedRetraction(
                RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "tests", dryRun: true))
            let current = try await queue.seedRetraction(
                RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "tests"))
            let history = try await queue.recentRetractions(
                appID: app.id, devices: [1, 2].map(Self.token), since: start, excluding: current.id, listLimit: 10)
            #expect(history == [Self.token(2): [.reference("m3")]])
            let none = try await queue.recentRetractions(
                appID: app.id, devices: [2].map(Self.token), since: start, excluding: earlier.id, listLimit: 10)
            #expect(none.isEmpty)
            let device = DeviceReferences(token: Self.token(1), references: ["m1"], collapseIDs: ["m1": "chat-7"])
            #expect(try await queue.supersededReferences(appID: app.id, devices: [device], retracted: ["m1"]) == [Self.token(1): ["m1"]])
            #expect(try await queue.supersededReferences(appID: app.id, devices: [device], retracted: ["m1", "m2"]).isEmpty)
        }
    }
}
