import APNsSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// The window and the connections size themselves to APNs's round trip,
/// through the engine's own path: a retraction worked by a worker, pushes
/// sent over the APNs client to the simulator.
@Suite("Sizing to the round trip")
struct RoundTripTests {
    @Test func whenTheWindowHoldsSendingBackItGrowsAndOpensTheConnectionsItNeeds() async throws {
        // A debug build on two cores answers a hundred or more pushes a second: a window of 10 at a round
        // trip of 500 ms (20 a second) is what holds it back, and so is 20 (40 a second). 25 streams a
        // connection: two carry 50 pushes; a third means the window tried more than that.
        let faults = APNsSimulatorFaults(latency: .milliseconds(500), maxConcurrentStreams: 25)
        try await SimulatedAPNs.with(faults: faults) { apns in
            let settings = EngineSettings(
                window: 5000, smallestWindow: 10, pageSize: 100, idlePoll: .milliseconds(50), retryPolicy: EngineTests.quickRetries)
            try await EngineTests.withEngine(apns, settings: settings) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "broadcast"), actor: "tests")
                let devices = TestTokens.tokens(0..<600)
                _ = try await engine.record(app: app, reference: "promo-1", tokens: devices)
                let status = try await EngineTests.retract(["promo-1"], app: app, engine: engine)
                #expect(status.retraction.counts == RetractionCounts(total: 600, sent: 600))
                #expect(devices.allSatisfy { apns.inbox($0).count == 1 })
                let window = engine.window(of: app, via: .apns)
                let statistics = apns.simulator.statistics
                #expect(window >= 40, "window \(window)")
                #expect(statistics.connections > 2, "\(statistics)")
                #expect(statistics.peakConcurrentStreams <= 25, "\(statistics)")
            }
        }
    }
}
