import APNsSimulator
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import RetractDevSupport
import RetractKit
import RetractModel
import RetractStore

extension Scenario {
    /// The primary is cut off from its streaming standby, then killed
    /// (SIGKILL) mid-retraction, as a machine that loses its network and then
    /// dies; the standby is promoted and the one address the workers reach
    /// the ledger by moves to it, as a managed service or Patroni does.
    /// Meanwhile deliveries are recorded without pause: with synchronous
    /// replication every one acknowledged must be there after (the commits
    /// made while the link was cut wait, unacknowledged).
    static let failoverSync = failover(synchronous: true)
    /// The same with asynchronous replication: what the primary acknowledged
    /// while the link was cut never reached the standby, and is lost; the
    /// scenario says how much.
    static let failoverAsync = failover(synchronous: false)

    /// How long the link between primary and standby is cut before the primary dies.
    static let partition: Duration = .seconds(1)

    private static func failover(synchronous: Bool) -> Scenario {
        let name = synchronous ? "failover-sync" : "failover-async"
        let summary =
            "the primary killed (SIGKILL) mid-retraction, its \(synchronous ? "synchronous" : "asynchronous") standby promoted, the address moved"
        // Two clusters of their own and a base backup: the full form and `--scenario` run them, not CI's short form.
        return Scenario(name: name, summary: summary, inShortForm: false) { stage, size in
            var outcome = Outcome(scenario: name)
            let primary = try ThrowawayPostgres.start(durable: true)
            defer { primary.stop() }
            let link = try await AddressProxy(target: primary.port)
            let standby = try primary.startStandby(synchronous: synchronous, reachingItAt: link.port)
            defer { standby.stop() }
            let address = try await AddressProxy(target: primary.port)
            let url = "postgres://postgres@127.0.0.1:\(address.port)/postgres?sslmode=disable"
            let devices = ChaosTokens.apns(0..<size.failover)
            do {
                let result = try await Fleet.with(stage, name: name, faults: APNsSimulatorFaults(latency: size.latency), database: url) {
                    fleet in
                    try fleet.addApp("failover")
                    try fleet.send("m", app: "failover", tokens: devices)
                    try fleet.run(["keys", "create", "--app", "failover", "--scopes", "retract,read", "--name", "before"])
                        .check("retract keys create")
                    let writer = AcknowledgedWrites(url: url, logger: stage.logger)
                    let writing = Task { await writer.run() }
                    var failedOver: (sent: Int, seconds: Double)?
                    var lag = 0.0
                    let run = try await fleet.retract("m", app: "failover", workers: 2, extra: ["--window", "\(size.window)"]) {
                        retraction, _ in
                        guard failedOver == nil, retraction.counts.sent >= devices.count * 3 / 10 else { return }
                        lag = try await writer.replayLag()
                        link.move(to: nil)
                        try await Task.sleep(for: partition)
                        let down = ContinuousClock.now
                        try primary.kill()
                        writer.primaryKilled()
                        // The dead primary's address reaches nothing until the failover is decided.
                        address.move(to: nil)
                        try await Task.sleep(for: size.failoverPause)
                        try standby.promote()
                        address.move(to: standby.port)
                        failedOver = (retraction.counts.sent, (ContinuousClock.now - down).inSeconds)
                    }
                    writing.cancel()
                    _ = await writing.value
                    guard let failedOver else {
                        outcome.problems.append("the retraction finished before the primary could be killed")
                        return outcome
                    }
                    outcome.notes.append(
                        String(
                            format:
                                "primary killed at %d of %d sent; %.1f s without a primary (%.0f s to decide, then promote and move the address)",
                            failedOver.sent, devices.count, failedOver.seconds, size.failoverPause.inSeconds))
                    let screen = await fleet.screen(of: "m", apnsDevices: devices)
                    // Synchronously, what the workers recorded is on the standby: only the pages in hand are sent again.
                    // Asynchronously, all they recorded since the standby's last replayed commit is lost, and sent again.
                    outcome.check(
                        run, account: try fleet.account(run.id), screen: screen,
                        maxDuplicates: synchronous ? 2 * lanes * pageSize : 2 * devices.count)
                    outcome.notes.append(
                        String(format: "the standby replayed %.2f s behind the primary when the link was cut", lag)
                            + (synchronous ? "" : "; \(screen.duplicates) pushes sent again from its older copy of the queue"))
                    // What was acknowledged before the kill, read from the promoted standby.
                    let lost = try await writer.lost()
                    let keys = try fleet.run(["keys", "list"]).check("retract keys list").stdout
                    let recorded = try await writer.count(
                        "SELECT count(*) FROM deliveries WHERE reference = 'm'")
                    outcome.notes.append(
                        "link to the standby cut \(Int(partition.inSeconds)) s before the kill; \(writer.acknowledgedBeforeKill) deliveries acknowledged before the kill, \(lost.count) of them lost"
                            + (lost.isEmpty ? "" : " (\(lost.first!) to \(lost.last!))"))
                    if recorded != devices.count { outcome.problems.append("\(recorded) of \(devices.count) deliveries of m are left") }
                    if !keys.contains("before") { outcome.problems.append("the API key made before the kill is gone") }
                    if synchronous, !lost.isEmpty {
                        outcome.problems.append("acknowledged deliveries lost with synchronous replication: \(lost.prefix(5))")
                    }
                    return outcome
                }
                await address.close()
                await link.close()
                return result
            } catch {
                await address.close()
                await link.close()
                throw error
            }
        }
    }
}

/// Deliveries recorded one by one, without pause, through the address, as a
/// chat backend records what it sent: which the ledger acknowledged (its
/// commit returned) before the primary was killed, and which of those the
/// promoted standby lacks.
private final class AcknowledgedWrites: Sendable {
    let url: String
    let logger: Logger
    private let state = NIOLockedValueBox(State())

    private struct State {
        var acknowledged: [String] = []
        /// How many were acknowledged when the primary was killed.
        var beforeKill: Int?
    }

    init(url: String, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    var acknowledgedBeforeKill: Int { state.withLockedValue { $0.beforeKill ?? $0.acknowledged.count } }

    func primaryKilled() {
        state.withLockedValue { $0.beforeKill = $0.acknowledged.count }
    }

    /// Records `ack-<n>` for one device until cancelled, over one pool that
    /// reconnects through the address; a write that fails (no primary) is
    /// not acknowledged, and the next number is tried.
    func run() async {
        let token = ChaosTokens.apns(0..<1)[0]
        try? await RetractStore.withStore(url: try DatabaseURL(url), maximumConnections: 1, logger: logger) { store in
            guard let app = try await store.app(named: "failover") else { return }
            var number = 0
            while !Task.isCancelled {
                number += 1
                let reference = "ack-\(number)"
                do {
                    try await store.record([Delivery(appID: app.id, reference: ReferenceID(reference), token: token, sentAt: Date())])
                    state.withLockedValue { $0.acknowledged.append(reference) }
                } catch {
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
    }

    /// The references acknowledged before the kill that the ledger no longer has.
    func lost() async throws -> [String] {
        let acknowledged = state.withLockedValue { Array($0.acknowledged.prefix($0.beforeKill ?? $0.acknowledged.count)) }
        return try await RetractStore.withStore(url: try DatabaseURL(url), maximumConnections: 1, logger: logger) { store in
            let present = try await store.recordedReferences(
                appID: try await store.app(named: "failover")?.id ?? 0, among: acknowledged.map { ReferenceID($0) })
            let found = Set(present.map(\.rawValue))
            return acknowledged.filter { !found.contains($0) }
        }
    }

    /// How far behind the primary the standby replays (`pg_stat_replication.replay_lag`), in seconds.
    func replayLag() async throws -> Double {
        try await RetractStore.withStore(url: try DatabaseURL(url), maximumConnections: 1, logger: logger) { store in
            var lag = 0.0
            let rows = try await store.client.query(
                "SELECT coalesce(max(extract(epoch FROM replay_lag)), 0)::float8 FROM pg_stat_replication", logger: logger)
            for try await value in rows.decode(Double.self) { lag = value }
            return lag
        }
    }

    func count(_ sql: String) async throws -> Int {
        try await RetractStore.withStore(url: try DatabaseURL(url), maximumConnections: 1, logger: logger) { store in
            var value = 0
            for try await row in try await store.client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(Int.self) {
                value = row
            }
            return value
        }
    }
}
