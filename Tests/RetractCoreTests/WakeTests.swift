import Foundation
import PostgresNIO
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Idle workers wake on the ledger's notification of new work, not on their poll.
@Suite("Waking on new work")
struct WakeTests {
    @Test func anIdleWorkerTakesEachNewRetractionAtOnceThoughItPollsOnlyOnceAMinute() async throws {
        try await SimulatedAPNs.with { apns in
            // Only a notification can wake it in time: its lanes look for work once a minute otherwise.
            let settings = EngineSettings(window: 50, pageSize: 50, lanes: 2, idlePoll: .seconds(60), retryPolicy: EngineTests.quickRetries)
            try await EngineTests.withEngine(apns, settings: settings) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let devices = TestTokens.tokens(0..<2)
                for reference in ["m1", "m2", "m3"] {
                    _ = try await engine.record(app: app, reference: ReferenceID(reference), tokens: devices)
                }
                let worker = RetractionWorker(engine: engine)
                let running = Task { await worker.run() }
                try await Self.waitUntilListening(engine.store)
                // Idle lanes, waiting on their minute-long poll.
                try await Task.sleep(for: .milliseconds(300))

                // Each in turn, so the listener is shown to go on after its first notification.
                for reference in ["m1", "m2"] {
                    let started = ContinuousClock.now
                    let (retraction, _) = try await engine.startRetraction(
                        app: app, target: .references([ReferenceID(reference)]), requestedBy: "tests")
                    var status = try await engine.status(of: retraction.id)
                    while !status.isFinished && ContinuousClock.now - started < .seconds(20) {
                        try await Task.sleep(for: .milliseconds(10))
                        status = try await engine.status(of: retraction.id)
                    }
                    let took = ContinuousClock.now - started
                    #expect(status.retraction.state == .done, "\(reference): \(status.retraction.state) after \(took)")
                    #expect(status.retraction.counts.sent == 2)
                    #expect(took < .seconds(5), "\(reference) took \(took) to finish")
                }
                for device in devices {
                    let retracted = apns.inbox(device).map { RetractPayload.retraction(in: $0.userInfo) }
                    // The second also carries the first: earlier retractions ride along.
                    #expect(retracted == [["m1"], ["m2", "m1"]])
                }
                running.cancel()
                await running.value
            }
        }
    }

    /// Until the worker's connection has run `LISTEN`.
    static func waitUntilListening(_ store: RetractStore) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let listening =
                try await store.client.query(
                    "SELECT count(*)::int FROM pg_stat_activity WHERE query LIKE 'LISTEN%retract_work%'", logger: TestDatabase.logger
                ).collect().first?.decode(Int.self) ?? 0
            if listening > 0 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the worker never listened for new work")
    }
}
