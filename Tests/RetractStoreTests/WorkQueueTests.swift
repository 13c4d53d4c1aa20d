import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

@Suite("Retractions and the work queue")
struct WorkQueueTests {
    /// An app with `devices` devices of reference "msg", and a retraction of it.
    private func retraction(_ store: RetractStore, devices: Int) async throws -> (App, Retraction) {
        let app = try await Fixture.registerApp(store)
        try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 0..<devices))
        let (retraction, replayed) = try await store.createRetraction(
            RetractionRequest(appID: app.id, target: .references(["msg"]), requestedBy: "moderator", reason: "sent by mistake"))
        #expect(!replayed)
        return (app, retraction)
    }

    /// Adds `count` push items to a retraction, as a page's retries would.
    private func queuePushes(_ store: RetractStore, to retraction: Retraction, count: Int) async throws {
        let page = try #require(try await store.claimWork(worker: "setup", limit: 1, lease: .seconds(60)).first)
        let retries = (0..<count).map {
            PushRetry(
                device: DeviceReferences(token: Fixture.token($0), references: ["msg"]), delay: .zero,
                attempts: 1, lastError: "429 TooManyRequests")
        }
        #expect(try await store.finish([WorkResult(item: page, counts: RetractionCounts(retrying: count), retries: retries)]) == [page.id])
    }

    @Test func aRetractionStartsWithOneItemCoveringEveryDevice() async throws {
        try await TestDatabase.withStore { store, _ in
            let (app, retraction) = try await retraction(store, devices: 2500)
            #expect(retraction.state == .queued)
            #expect(retraction.counts == RetractionCounts(total: 2500))
            #expect(retraction.references == ["msg"])
            #expect(try await store.queuedWorkCount(retractionID: retraction.id) == 1)
            #expect(try await store.retraction(id: retraction.id) == retraction)
            let audit = try await store.auditLog(appID: app.id)
            #expect(audit.first?.action == "retraction.created")
            #expect(audit.first?.actor == "moderator")
            #expect(
                audit.first?.details == [
                    "references": "msg", "devices": "2500", "dryRun": "false", "reason": "sent by mistake", "mode": "background",
                ])
        }
    }

    @Test func pagesSplitFinishAndTheRetractionEndsDone() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 2500)
            var sent = 0
            // What the engine does: claim a page, read up to 1000 devices, hand the rest on, send, finish.
            while let item = try await store.claimWork(worker: "w1", limit: 1, lease: .seconds(60)).first {
                guard case .page(let after, let through) = item.kind else {
                    Issue.record("only pages were queued")
                    return
                }
                let page = try await store.devicePage(
                    appID: retraction.appID, references: retraction.references, after: after, through: through, limit: 1000)
                if page.mayHaveMore, let last = page.last { #expect(try await store.splitPage(item, at: last)) }
                sent += page.devices.count
                #expect(try await store.finish([WorkResult(item: item, counts: RetractionCounts(sent: page.devices.count))]) == [item.id])
            }
            #expect(sent == 2500)
            let finished = try #require(try await store.retraction(id: retraction.id))
            #expect(finished.state == .done)
            #expect(finished.counts == RetractionCounts(total: 2500, sent: 2500))
            #expect(finished.counts.pending == 0)
            #expect(finished.startedAt != nil && finished.finishedAt != nil)
        }
    }

    @Test func concurrentClaimersNeverGetTheSameItem() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 1)
            try await queuePushes(store, to: retraction, count: 400)
            let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var mine: [Int64] = []
                        while case let items = try await store.claimWork(worker: "w\(worker)", limit: 7, lease: .seconds(60)),
                            !items.isEmpty
                        {
                            mine += items.map(\.id)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(claimed.count == 400)
            #expect(Set(claimed).count == 400)
        }
    }

    @Test func aLapsedLeaseIsClaimedAgainAndTheOldClaimCanNoLongerFinish() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 1)
            try await queuePushes(store, to: retraction, count: 1)
            let first = try #require(try await store.claimWork(worker: "crashes", limit: 10, lease: .milliseconds(300)).first)
            #expect(first.attempts == 2)
            #expect(try await store.claimWork(worker: "other", limit: 10, lease: .seconds(60)).isEmpty)
            try await Task.sleep(for: .milliseconds(400))
            let second = try #require(try await store.claimWork(worker: "other", limit: 10, lease: .seconds(60)).first)
            #expect(second.id == first.id)
            #expect(second.attempts == 3)
            #expect(second.kind == .push(DeviceReferences(token: Fixture.token(0), references: ["msg"])))
            // The worker that lost its lease comes back: nothing it does counts.
            #expect(try await store.finish([WorkResult(item: first, counts: RetractionCounts(sent: 1, retrying: -1))]).isEmpty)
            #expect(try await store.release(first, .failed("late", retryAfter: .zero)) == false)
            #expect(try await store.extendLease([first], by: .seconds(60)).isEmpty)
            #expect(try await store.retraction(id: retraction.id)?.counts.sent == 0)
            #expect(try await store.finish([WorkResult(item: second, counts: RetractionCounts(sent: 1, retrying: -1))]) == [second.id])
            let done = try #require(try await store.retraction(id: retraction.id))
            #expect(done.counts == RetractionCounts(total: 1, sent: 1))
            #expect(done.state == .done)
        }
    }

    @Test func aReleasedItemComesBackWhenDue() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 1)
            try await queuePushes(store, to: retraction, count: 1)
            let item = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            #expect(try await store.release(item, .failed("the database refused it", retryAfter: .milliseconds(300))))
            #expect(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).isEmpty)
            try await Task.sleep(for: .milliseconds(400))
            let again = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            #expect(again.id == item.id)
            // A failed attempt counts; the error is kept for the next claim to read.
            #expect(again.attempts == item.attempts + 1)
            #expect(again.lastError == "the database refused it")
        }
    }

    @Test func anItemWaitingForItsServiceCountsItsDevicesAsWaitingAndNoAttempt() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 3)
            let item = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            #expect(try await store.release(item, .unreachable("cannot connect to APNs: refused", devices: 3, retryAfter: .zero)))
            let waiting = try #require(try await store.retraction(id: retraction.id))
            #expect(waiting.counts.waiting == 3)
            #expect(waiting.waitingReason == "cannot connect to APNs: refused")
            let again = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            #expect(again.attempts == item.attempts)
            let since = try #require(again.waitingSince)
            // Still unreachable: it has been waiting since the first time.
            #expect(try await store.release(again, .unreachable("cannot connect to APNs: refused", devices: 3, retryAfter: .zero)))
            let third = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            #expect(third.waitingSince == since)
            // The service came back: finishing the item ends the wait.
            #expect(try await store.finish([WorkResult(item: third, counts: RetractionCounts(sent: 3))]) == [third.id])
            let done = try #require(try await store.retraction(id: retraction.id))
            #expect(done.counts == RetractionCounts(total: 3, sent: 3))
            #expect(done.state == .done)
        }
    }

    @Test func givingUpOnAPageCountsItsDevicesFailedWithTheReason() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 5)
            let item = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            let failed = try await store.giveUp(item, of: retraction, reason: "given up after 8 attempts: poison")
            #expect(failed == 5)
            let done = try #require(try await store.retraction(id: retraction.id))
            #expect(done.state == .done)
            #expect(done.counts == RetractionCounts(total: 5, failed: 5))
            #expect(try await store.retractionFailures(id: retraction.id) == ["given up after 8 attempts: poison": 5])
        }
    }

    @Test func aRetryIsDueAfterItsDelayByTheDatabaseClock() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 1)
            let page = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            let retry = PushRetry(
                device: DeviceReferences(token: Fixture.token(0), references: ["msg"]), delay: .seconds(60), attempts: 1, lastError: "429")
            try await store.finish([WorkResult(item: page, counts: RetractionCounts(retrying: 1), retries: [retry])])
            // A minute from when it was written, by the server's clock: far from any scheduling noise.
            let secondsAhead = try await Fixture.scalar(
                store, "SELECT extract(epoch FROM run_after - now())::float8 FROM work_items WHERE retraction_id = \(retraction.id)",
                as: Double.self)
            #expect((50.0...60.0).contains(secondsAhead ?? -1), "\(secondsAhead ?? -1)")
            #expect(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).isEmpty)
        }
    }

    @Test func finishingMarksDeadTokensAndQueuesRetriesAtomically() async throws {
        try await TestDatabase.withStore { store, _ in
            let (app, retraction) = try await retraction(store, devices: 3)
            let page = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            let dead = DeadToken(
                token: Fixture.token(1), since: Date(timeIntervalSince1970: 1_700_000_000), reason: "Unregistered",
                learnedAt: Date(timeIntervalSince1970: 1_800_000_000))
            let retry = PushRetry(
                device: DeviceReferences(token: Fixture.token(2), references: ["msg"]), delay: .zero, attempts: 1, lastError: "503")
            try await store.finish([
                WorkResult(item: page, counts: RetractionCounts(sent: 1, dead: 1, retrying: 1), retries: [retry], deadTokens: [dead])
            ])
            #expect(try await store.deadToken(Fixture.token(1), appID: app.id) == dead)
            let sending = try #require(try await store.retraction(id: retraction.id))
            #expect(sending.state == .sending)
            #expect(sending.counts == RetractionCounts(total: 3, sent: 1, dead: 1, retrying: 1))
            let push = try #require(try await store.claimWork(worker: "w", limit: 1, lease: .seconds(60)).first)
            #expect(push.kind == .push(retry.device))
            #expect(push.attempts == 2)
            try await store.finish([WorkResult(item: push, counts: RetractionCounts(retrying: -1, failed: 1))])
            let done = try #require(try await store.retraction(id: retraction.id))
            #expect(done.state == .done)
            #expect(done.counts == RetractionCounts(total: 3, sent: 1, dead: 1, failed: 1))
            // The next retraction of the same reference counts the dead token among its devices; a dry run says it would skip it.
            let next = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .references(["msg"]), requestedBy: "moderator", dryRun: true))
            #expect(next.retraction.counts.total == 3)
            #expect(next.retraction.counts.skipped == 1)
        }
    }

    @Test func idempotencyKeyReplaysTheSameRequestAndRefusesAnother() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 0..<3))
            let request = RetractionRequest(
                appID: app.id, target: .references(["msg"]), requestedBy: "chat-backend", idempotencyKey: "delete-8812")
            let first = try await store.createRetraction(request)
            let again = try await store.createRetraction(request)
            #expect(again.replayed)
            #expect(again.retraction.id == first.retraction.id)
            var other = request
            other.target = .references(["msg", "another"])
            let error = await #expect(throws: StoreError.self) { try await store.createRetraction(other) }
            #expect(error?.code == .idempotencyConflict)
            #expect(error?.message.contains("delete-8812") == true)
            #expect(try await Fixture.scalar(store, "SELECT count(*) FROM retractions", as: Int.self) == 1)
            #expect(try await store.queuedWorkCount() == 1)
        }
    }

    @Test func aDryRunCountsAndQueuesNothing() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: app, reference: "msg", tokens: 0..<42))
            let (retraction, _) = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .references(["msg"]), requestedBy: "moderator", dryRun: true))
            #expect(retraction.state == .done)
            #expect(retraction.dryRun)
            #expect(retraction.counts.total == 42)
            #expect(try await store.queuedWorkCount() == 0)
            let empty = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .references(["never-sent"]), requestedBy: "moderator"))
            #expect(empty.retraction.state == .done)
            #expect(empty.retraction.counts.total == 0)
        }
    }

    @Test func aFailedRetractionDropsItsWork() async throws {
        try await TestDatabase.withStore { store, _ in
            let (_, retraction) = try await retraction(store, devices: 5)
            try await store.failRetraction(id: retraction.id, reason: "403 InvalidProviderToken: the app's key is not accepted")
            let failed = try #require(try await store.retraction(id: retraction.id))
            #expect(failed.state == .failed)
            #expect(failed.failure == "403 InvalidProviderToken: the app's key is not accepted")
            #expect(try await store.queuedWorkCount(retractionID: retraction.id) == 0)
        }
    }

    @Test func badRetractionRequestsAreRefused() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let cases: [(RetractionRequest, StoreError.Code, String)] = [
                // A target is checked where it is made (RetractionTarget's throwing init); one built
                // around it still meets the ledger's own constraint, and nothing is written.
                (RetractionRequest(appID: app.id, target: .references([]), requestedBy: "m"), .checkViolation, "retractions_target_check"),
                (RetractionRequest(appID: app.id, target: .references(["a"]), requestedBy: ""), .invalidInput, "requestedBy"),
                (RetractionRequest(appID: 9999, target: .references(["a"]), requestedBy: "m"), .notFound, "app 9999 does not exist"),
            ]
            for (request, code, message) in cases {
                let error = await #expect(throws: StoreError.self) { try await store.createRetraction(request) }
                #expect(error?.code == code)
                #expect(error?.message.contains(message) == true, "\(error?.message ?? "") should say \(message)")
            }
        }
    }

    @Test func apiKeysAreStoredAsHashesAndRevoked() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let hash = Array(repeating: UInt8(7), count: 32)
            let key = APIKeyRecord(name: "chat-backend", keyHash: hash, scopes: [.record, .retract], appIDs: [app.id], createdBy: "admin")
            try await store.createAPIKey(key)
            let read = try #require(try await store.apiKey(hash: hash))
            #expect(read.id == key.id)
            #expect(read.scopes == [.record, .retract])
            #expect(read.appIDs == [app.id])
            #expect(read.revokedAt == nil)
            #expect(try await store.revokeAPIKey(id: key.id, actor: "admin"))
            #expect(try await store.revokeAPIKey(id: key.id, actor: "admin") == false)
            #expect(try await store.apiKey(hash: hash)?.revokedAt != nil)
            #expect(try await store.apiKey(hash: Array(repeating: 8, count: 32)) == nil)
            let otherApp = APIKeyRecord(
                name: "x", keyHash: Array(repeating: 9, count: 32), scopes: [.read], appIDs: [777], createdBy: "admin")
            let error = await #expect(throws: StoreError.self) { try await store.createAPIKey(otherApp) }
            #expect(error?.code == .notFound)
            let actions = try await store.auditLog().map(\.action)
            #expect(actions.prefix(2) == ["key.revoked", "key.created"])
        }
    }
}
