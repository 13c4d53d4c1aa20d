import APNsSimulator
import FCMSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

/// The worker over the in-memory queue (``InMemoryWorkQueue``): its paging,
/// its waits for a service that cannot be reached and its giving up, with
/// pushes to the APNs simulator and no database.
@Suite("The worker, on the in-memory queue")
struct WorkerTests {
    static let settings = EngineSettings(
        window: 200, pageSize: 250, lanes: 3, idlePoll: .milliseconds(50), retryPolicy: EngineTests.quickRetries)

    /// A worker of `queue` sending to `apns` (and `fcm`), its transports shut down afterwards.
    static func withWorker(
        _ queue: InMemoryWorkQueue, _ apns: SimulatedAPNs, fcm: SimulatedFCM? = nil, settings: EngineSettings = settings,
        credentialCheckInterval: Duration = .seconds(10), _ body: (RetractionWorker) async throws -> Void
    ) async throws {
        try await withTransports(apns, fcm: fcm, credentialCheckInterval: credentialCheckInterval) { transports in
            try await body(RetractionWorker(queue: queue, transports: transports, settings: settings, logger: TestDatabase.logger))
        }
    }

    /// Transports that trust the simulators, shut down afterwards.
    static func withTransports(
        _ apns: SimulatedAPNs, fcm: SimulatedFCM? = nil, credentialCheckInterval: Duration = .seconds(10),
        _ body: (PushTransports) async throws -> Void
    ) async throws {
        let transports = PushTransports(
            settings: APNsSettings(additionalTrustRootsPEM: [try String(contentsOfFile: apns.caPath, encoding: .utf8)]),
            fcm: fcm?.settings() ?? FCMSettings(), logger: TestDatabase.logger, credentialCheckInterval: credentialCheckInterval)
        do {
            try await body(transports)
            await transports.shutdown()
        } catch {
            await transports.shutdown()
            throw error
        }
    }

    /// A retraction of 1,100 devices goes out in pages of 250, split as they
    /// are read, and every phone is sent the reference once.
    @Test func aRetractionOfManyPagesReachesEveryPhoneOnce() async throws {
        try await SimulatedAPNs.with { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "chat"))
            let devices = TestTokens.tokens(0..<1100)
            queue.record(devices.map { Delivery(appID: app.id, reference: "m1", token: $0, sentAt: Date()) })
            let retraction = queue.createRetraction(RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "tests"))
            try await Self.withWorker(queue, apns) { worker in
                try await FaultTests.within(.seconds(60)) { try await worker.finish([retraction.id]) }
            }
            let done = try #require(try await queue.retraction(id: retraction.id))
            #expect(done.state == .done)
            #expect(done.counts == RetractionCounts(total: 1100, sent: 1100))
            #expect(done.pushes.total == 1100)
            let notOnce = devices.filter { token in
                apns.inbox(token).map { RetractPayload.retraction(in: $0.userInfo) } != [["m1"]]
            }
            #expect(notOnce.isEmpty, "\(notOnce.count) phones were not sent m1 once")
        }
    }

    /// APNs offline: every device waits for it, and says why; none fails,
    /// though the wait outlasts the retry budget; once it is back, each
    /// device is sent once.
    @Test func anOutageIsWaitedOutWithoutUsingTheRetryBudget() async throws {
        try await SimulatedAPNs.with { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "outage"))
            let devices = TestTokens.tokens(0..<100)
            queue.record(devices.map { Delivery(appID: app.id, reference: "r", token: $0, sentAt: Date()) })
            let settings = EngineSettings(
                window: 100, pageSize: 50, lanes: 2, idlePoll: .milliseconds(50), retryBudget: .milliseconds(100),
                retryPolicy: EngineTests.quickRetries)
            try await Self.withWorker(queue, apns, settings: settings) { worker in
                await apns.simulator.goOffline()
                let retraction = queue.createRetraction(RetractionRequest(appID: app.id, target: .references(["r"]), requestedBy: "tests"))
                let work = Task { try await worker.finish([retraction.id]) }

                var waiting = try #require(try await queue.retraction(id: retraction.id))
                let deadline = ContinuousClock.now + .seconds(20)
                while waiting.counts.waiting < 100, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    waiting = try #require(try await queue.retraction(id: retraction.id))
                }
                #expect(waiting.counts.waiting == 100)
                #expect(waiting.waitingReason?.hasPrefix("cannot connect to APNs") == true)
                try await Task.sleep(for: .seconds(1))
                let meanwhile = try #require(try await queue.retraction(id: retraction.id))
                #expect(meanwhile.state == .sending || meanwhile.state == .queued)
                #expect(meanwhile.counts.failed == 0)

                try await apns.simulator.comeBackOnline()
                try await FaultTests.within(.seconds(60)) { try await work.value }
                let done = try #require(try await queue.retraction(id: retraction.id))
                #expect(done.state == .done)
                #expect(done.counts == RetractionCounts(total: 100, sent: 100))
                for device in devices { #expect(apns.inbox(device).count == 1) }
            }
        }
    }

    /// A service that refuses connections: the page goes back, its devices
    /// counted as waiting with the reason, and it is tried again, not counted
    /// as an attempt; once waiting longer than the outage limit, its devices
    /// are given up with the reason, and the retraction ends.
    @Test func aPageWaitsForAServiceThatCannotBeReachedAndIsGivenUpAfterTheOutageLimit() async throws {
        try await SimulatedAPNs.with { apns in
            let queue = InMemoryWorkQueue()
            var registration = apns.registration(name: "chat")
            // Nothing listens on port 1.
            registration.endpoint = "https://127.0.0.1:1"
            let app = queue.register(registration)
            queue.record(TestTokens.tokens(0..<3).map { Delivery(appID: app.id, reference: "m1", token: $0, sentAt: Date()) })
            let retraction = queue.createRetraction(RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "tests"))
            var settings = Self.settings
            settings.outageLimit = .seconds(3)
            try await Self.withWorker(queue, apns, settings: settings) { worker in
                let running = Task { try await worker.finish([retraction.id]) }
                var waiting = try #require(try await queue.retraction(id: retraction.id))
                let deadline = ContinuousClock.now + .seconds(20)
                while waiting.counts.waiting == 0 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                    waiting = try #require(try await queue.retraction(id: retraction.id))
                }
                #expect(waiting.counts.waiting == 3)
                #expect(waiting.state != .done)
                #expect(waiting.waitingReason?.isEmpty == false)
                try await FaultTests.within(.seconds(30)) { try await running.value }
            }
            let ended = try #require(try await queue.retraction(id: retraction.id))
            #expect(ended.state == .done)
            #expect(ended.counts.failed == 3)
            #expect(ended.counts.sent == 0)
            let reasons = queue.failures(of: retraction.id)
            #expect(reasons.values.reduce(0, +) == 3)
            #expect(reasons.keys.allSatisfy { $0.hasPrefix("the service could not be reached for 3 s: ") }, "\(reasons)")
        }
    }

    /// An item whose claims keep ending without a result (a poison item) is
    /// given up after `itemAttempts` claims, its devices failed with why.
    @Test func anItemClaimedTooOftenIsGivenUpWithItsLastError() async throws {
        try await SimulatedAPNs.with { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "chat"))
            queue.record(TestTokens.tokens(0..<4).map { Delivery(appID: app.id, reference: "m1", token: $0, sentAt: Date()) })
            let retraction = queue.createRetraction(RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "tests"))
            var settings = Self.settings
            settings.itemAttempts = 2
            for _ in 0..<2 {
                let item = try #require(try await queue.claimWork(worker: "dying", limit: 1, lease: .seconds(60), retractions: nil).first)
                try await queue.release(item, .failed("the database refused the finish", retryAfter: .zero))
            }
            try await Self.withWorker(queue, apns, settings: settings) { worker in
                try await FaultTests.within(.seconds(30)) { try await worker.finish([retraction.id]) }
            }
            let ended = try #require(try await queue.retraction(id: retraction.id))
            #expect(ended.state == .done)
            #expect(ended.counts.failed == 4)
            #expect(queue.failures(of: retraction.id) == ["given up after 2 attempts: the database refused the finish": 4])
            #expect(TestTokens.tokens(0..<4).allSatisfy { apns.inbox($0).isEmpty })
        }
    }
}
