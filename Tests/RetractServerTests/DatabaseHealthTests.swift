import Foundation
import PostgresNIO
import Prometheus
import RetractStore
import RetractTestSupport
import Testing

@testable import RetractServer

/// The server's ping, whose answer turns the API's 503s on and off.
@Suite("Database health")
struct DatabaseHealthTests {
    /// A ping stuck on its connection while the database answers every other
    /// statement is not a database that is down; once nothing is answered,
    /// two pings without an answer are.
    @Test(.timeLimit(.minutes(1))) func aPingLeftWaitingWhileOtherStatementsAreAnsweredLeavesTheDatabaseUp() async throws {
        try await TestDatabase.withStore { store, _ in
            let silent = try SilentListener()
            // The ping's connection goes to a port that takes the connection and never answers.
            let hung = PostgresClient(
                configuration: .init(
                    host: "127.0.0.1", port: silent.port, username: "retract", password: nil, database: "retract", tls: .disable))
            let probe = RetractStore(client: store.client, healthClient: hung, logger: TestDatabase.logger)
            let running = Task { await hung.run() }
            defer { running.cancel() }
            let health = DatabaseHealth(
                metricsFactory: RetractServer.metricsFactory(registry: PrometheusCollectorRegistry()), logger: TestDatabase.logger)

            // The workers' statements keep being answered.
            let busy = Task {
                while !Task.isCancelled {
                    _ = try? await probe.queuedWorkCount()
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            for _ in 0..<3 { await health.check(probe, timeout: .milliseconds(300)) }
            #expect(health.isUp)

            busy.cancel()
            await busy.value
            await health.check(probe, timeout: .milliseconds(300))
            // One ping left unanswered changes nothing yet; the second does.
            #expect(health.isUp)
            await health.check(probe, timeout: .milliseconds(300))
            #expect(!health.isUp)
            // Listening until here: a port closed would refuse the ping, which is down at once.
            withExtendedLifetime(silent) {}
        }
    }

    /// A read of the feed waiting on a database that stops answering is
    /// given up within a second of the health check seeing it down, and
    /// answered 503 as any call then is: not after its 60-second limit.
    @Test(.timeLimit(.minutes(1))) func aReadWaitingOnADatabaseSeenDownIsGivenUpWithinASecond() async throws {
        let silent = try SilentListener()
        let hung = PostgresClient(
            configuration: .init(
                host: "127.0.0.1", port: silent.port, username: "retract", password: nil, database: "retract", tls: .disable))
        let running = Task { await hung.run() }
        defer { running.cancel() }
        let store = RetractStore(client: hung, logger: TestDatabase.logger)
        let health = DatabaseHealth(
            metricsFactory: RetractServer.metricsFactory(registry: PrometheusCollectorRegistry()), logger: TestDatabase.logger)
        let read = Task {
            try await health.whileUpReading { abandonWhen in
                try await store.retractions(forDevice: TestTokens.token(1), appID: 1, limit: 10, abandonWhen: abandonWhen)
            }
        }
        try await Task.sleep(for: .milliseconds(700))
        let down = ContinuousClock.now
        health.record(up: false, detail: "no answer to two pings")
        let outcome = await read.result
        let waited = ContinuousClock.now - down
        guard case .failure(let error as APIProblem) = outcome else {
            Issue.record("expected a 503, got \(outcome)")
            return
        }
        #expect(error.kind == .databaseUnavailable)
        #expect(error.detail.contains("became unavailable during the request"), "\(error.detail)")
        #expect(waited < .seconds(1.5), "\(waited)")
        withExtendedLifetime(silent) {}
    }
}
