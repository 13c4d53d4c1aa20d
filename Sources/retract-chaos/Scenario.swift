import APNsSimulator
import FCMSimulator
import Foundation
import NIOCore
import RetractKit
import RetractModel
import RetractStore

/// How big the fleets are and how long the outage lasts: the full form, or
/// the short one CI runs.
struct Size: Sendable {
    var killed: Int
    var restarted: Int
    var outage: Int
    var outageLength: Duration
    var throttled: Int
    var mixed: Int
    var revived: Int
    var poison: Int
    /// Devices of the failover scenarios.
    var failover: Int
    /// How long the address reaches nothing after the primary dies, before
    /// the standby is promoted and the address moved to it: the time a
    /// managed service or Patroni takes to decide.
    var failoverPause: Duration
    /// Added to every APNs answer, so that a retraction lasts long enough to
    /// be interrupted part-way.
    var latency: TimeAmount
    /// Pushes in flight per worker process.
    var window: Int

    static let full = Size(
        killed: 50_000, restarted: 20_000, outage: 20_000, outageLength: .seconds(300), throttled: 20_000, mixed: 2_000, revived: 1_000,
        poison: 2_000, failover: 20_000, failoverPause: .seconds(30), latency: .milliseconds(10), window: 200)
    static let short = Size(
        killed: 5_000, restarted: 3_000, outage: 3_000, outageLength: .seconds(10), throttled: 3_000, mixed: 400, revived: 200,
        poison: 1_000, failover: 3_000, failoverPause: .seconds(5),
        latency: .milliseconds(20), window: 50)
}

/// What one scenario measured, and why it failed if it did.
struct Outcome: Sendable {
    var scenario: String
    var devices = 0
    var reached = 0
    var duplicates = 0
    var failed = 0
    var showing = 0
    var seconds = 0.0
    var notes: [String] = []
    var problems: [String] = []

    var passed: Bool { problems.isEmpty }

    /// The checks every scenario makes of a finished retraction: it is done,
    /// every device is sent, dead or failed, the expected number failed, and
    /// no device that could be reached still shows the notification.
    mutating func check(
        _ run: Fleet.Run, account: Fleet.Account, screen: Screen, expectFailed: ClosedRange<Int> = 0...0, expectShowing: Int = 0,
        maxDuplicates: Int
    ) {
        seconds = run.seconds
        guard let retraction = run.retraction else {
            problems.append("the retraction did not finish in time")
            return
        }
        devices = account.total
        reached = screen.reached
        duplicates = screen.duplicates
        failed = account.failed
        showing = screen.showing.count
        if retraction.state != .done { problems.append("state \(retraction.state.rawValue): \(retraction.failure ?? "")") }
        if account.sent + account.unregistered + account.failed != account.total {
            problems.append(
                "sent \(account.sent) + unregistered \(account.unregistered) + failed \(account.failed) ≠ \(account.total) devices")
        }
        if !expectFailed.contains(account.failed) {
            problems.append("\(account.failed) failed, expected \(expectFailed): \(account.failures)")
        }
        if showing != expectShowing { problems.append("\(showing) devices still show it, expected \(expectShowing)") }
        if duplicates > maxDuplicates { problems.append("\(duplicates) duplicate pushes, more than the bound of \(maxDuplicates)") }
    }
}

/// One way things go wrong, run end to end.
struct Scenario: Sendable {
    var name: String
    var summary: String
    /// Whether `--short` (what CI runs) runs it; the full form runs every one, as `--scenario` does.
    var inShortForm = true
    var run: @Sendable (ChaosStage, Size) async throws -> Outcome

    /// Pages of a retraction held by one worker process at once: what a
    /// killed or interrupted process can leave to be sent again.
    static let lanes = 4
    static let pageSize = 500

    static let all: [Scenario] = [
        workerKilled, postgresRestarted, apnsOutage, throttled, senderIDMismatch, deadThenRevived, poison, failoverSync, failoverAsync,
    ]

    static let workerKilled = Scenario(
        name: "worker-killed", summary: "two `retract serve --mode workers` share a retraction; one is killed with SIGKILL midway"
    ) { stage, size in
        var outcome = Outcome(scenario: "worker-killed")
        let devices = ChaosTokens.apns(0..<size.killed)
        return try await Fleet.with(stage, name: "worker-killed", faults: APNsSimulatorFaults(latency: size.latency)) { fleet in
            try fleet.addApp("broadcast")
            try fleet.send("spring-sale", app: "broadcast", tokens: devices)
            var killedAt: Int?
            let run = try await fleet.retract("spring-sale", app: "broadcast", workers: 2, extra: ["--window", "\(size.window)"]) {
                retraction, workers in
                if killedAt == nil, retraction.counts.sent >= devices.count * 3 / 10 {
                    workers[0].kill()
                    killedAt = retraction.counts.sent
                }
            }
            if let killedAt {
                outcome.notes.append("worker 1 killed at \(killedAt) of \(devices.count) sent")
            } else {
                outcome.problems.append("the retraction finished before a worker could be killed")
            }
            let screen = await fleet.screen(of: "spring-sale", apnsDevices: devices)
            outcome.check(run, account: try fleet.account(run.id), screen: screen, maxDuplicates: lanes * pageSize)
            return outcome
        }
    }

    static let postgresRestarted = Scenario(
        name: "postgres-restart", summary: "PostgreSQL restarted (`pg_ctl restart -m immediate`) mid-retraction"
    ) { stage, size in
        var outcome = Outcome(scenario: "postgres-restart")
        let devices = ChaosTokens.apns(0..<size.restarted)
        return try await Fleet.with(stage, name: "postgres-restart", faults: APNsSimulatorFaults(latency: size.latency)) { fleet in
            try fleet.addApp("restart")
            try fleet.send("m", app: "restart", tokens: devices)
            var restartedAt: Int?
            let run = try await fleet.retract("m", app: "restart", extra: ["--window", "\(size.window)"]) { retraction, _ in
                if restartedAt == nil, retraction.counts.sent >= devices.count * 3 / 10 {
                    restartedAt = retraction.counts.sent
                    let started = ContinuousClock.now
                    try stage.postgres.restartImmediately()
                    outcome.notes.append(
                        String(
                            format: "PostgreSQL restarted at %d of %d sent, down %.1f s", retraction.counts.sent, devices.count,
                            (ContinuousClock.now - started).inSeconds))
                }
            }
            if restartedAt == nil { outcome.problems.append("the retraction finished before PostgreSQL could be restarted") }
            let screen = await fleet.screen(of: "m", apnsDevices: devices)
            outcome.check(run, account: try fleet.account(run.id), screen: screen, maxDuplicates: lanes * pageSize)
            return outcome
        }
    }

    static let apnsOutage = Scenario(
        name: "apns-outage", summary: "APNs unreachable (connections cut and refused) mid-retraction, then back"
    ) { stage, size in
        var outcome = Outcome(scenario: "apns-outage")
        let devices = ChaosTokens.apns(0..<size.outage)
        return try await Fleet.with(stage, name: "apns-outage", faults: APNsSimulatorFaults(latency: size.latency)) { fleet in
            try fleet.addApp("outage")
            try fleet.send("m", app: "outage", tokens: devices)
            // A retry budget far shorter than the outage: waiting for APNs must not spend it.
            var offlineSince: ContinuousClock.Instant?
            var backAt: ContinuousClock.Instant?
            var mostWaiting = 0
            var failedDuringOutage = 0
            let run = try await fleet.retract(
                "m", app: "outage", extra: ["--window", "\(size.window)", "--retry-budget", "1"], limit: size.outageLength + .seconds(900)
            ) { retraction, _ in
                if offlineSince == nil, retraction.counts.sent >= devices.count * 3 / 10 {
                    await fleet.apns.goOffline()
                    offlineSince = .now
                    outcome.notes.append(
                        "APNs offline for \(Int(size.outageLength.inSeconds)) s from \(retraction.counts.sent) of \(devices.count) sent")
                }
                if let since = offlineSince, backAt == nil {
                    mostWaiting = max(mostWaiting, retraction.counts.waiting)
                    failedDuringOutage = retraction.counts.failed
                    if ContinuousClock.now - since >= size.outageLength {
                        try await fleet.apns.comeBackOnline()
                        backAt = .now
                    }
                }
            }
            if let backAt {
                outcome.notes.append(
                    String(
                        format: "up to %d devices waited; %d failed meanwhile; done %.1f s after APNs came back", mostWaiting,
                        failedDuringOutage, (ContinuousClock.now - backAt).inSeconds))
                if mostWaiting == 0 { outcome.problems.append("no device was reported waiting for APNs during the outage") }
            } else {
                outcome.problems.append("the retraction finished before APNs came back")
            }
            let screen = await fleet.screen(of: "m", apnsDevices: devices)
            outcome.check(run, account: try fleet.account(run.id), screen: screen, maxDuplicates: 2 * size.window + pageSize)
            return outcome
        }
    }

    static let throttled = Scenario(
        name: "throttled", summary: "30% of answers 429 or 503, and GOAWAY every 500 streams"
    ) { stage, size in
        var outcome = Outcome(scenario: "throttled")
        let devices = ChaosTokens.apns(0..<size.throttled)
        let faults = APNsSimulatorFaults(tooManyRequestsRate: 0.15, serviceUnavailableRate: 0.15, seed: 42, goAwayAfterStreams: 500)
        return try await Fleet.with(stage, name: "throttled", faults: faults) { fleet in
            try fleet.addApp("throttled")
            // The originals, sent through the same faults, are retried until
            // accepted, as soon as the retraction's are.
            try fleet.send("m", app: "throttled", tokens: devices, extra: ["--retry-base-delay", "20"])
            let rejectedBefore = fleet.apns.statistics.rejected
            let run = try await fleet.retract("m", app: "throttled", extra: ["--retry-base-delay", "20"])
            let statistics = fleet.apns.statistics
            outcome.notes.append(
                "\(statistics.rejected - rejectedBefore) answers 429 or 503 during the retraction; \(statistics.goAwaysSent) GOAWAYs in all"
            )
            let screen = await fleet.screen(of: "m", apnsDevices: devices)
            outcome.check(run, account: try fleet.account(run.id), screen: screen, maxDuplicates: devices.count / 100)
            return outcome
        }
    }

    static let senderIDMismatch = Scenario(
        name: "sender-id-mismatch", summary: "a mixed APNs/FCM app with one FCM token of another Firebase project"
    ) { stage, size in
        var outcome = Outcome(scenario: "sender-id-mismatch")
        let iPhones = ChaosTokens.apns(0..<size.mixed / 2)
        let androids = ChaosTokens.fcm(0..<size.mixed / 2)
        return try await Fleet.with(stage, name: "sender-id-mismatch", faults: APNsSimulatorFaults(latency: size.latency), fcm: true) {
            fleet in
            try fleet.addApp("mixed", fcm: true)
            try fleet.send("m", app: "mixed", tokens: iPhones)
            try fleet.send("m", app: "mixed", tokens: androids, via: .fcm)
            let foreign = androids[7]
            fleet.fcm?.script(Array(repeating: .senderIDMismatch, count: 5), for: PushService.fcm.text(of: foreign))
            let run = try await fleet.retract("m", app: "mixed")
            let account = try fleet.account(run.id)
            let screen = await fleet.screen(of: "m", apnsDevices: iPhones, fcmDevices: androids)
            // The foreign token's device is the one that fails, and the one left showing.
            outcome.check(run, account: account, screen: screen, expectFailed: 1...1, expectShowing: 1, maxDuplicates: 0)
            if screen.showing != [foreign] { outcome.problems.append("the devices still showing it are not the foreign token's") }
            if !account.failures.keys.allSatisfy({ $0.contains("SENDER_ID_MISMATCH") }) {
                outcome.problems.append("failures \(account.failures) are not SENDER_ID_MISMATCH")
            }
            outcome.notes.append("failed: \(account.failures.keys.sorted().joined(separator: "; "))")
            return outcome
        }
    }

    static let deadThenRevived = Scenario(
        name: "dead-then-revived", summary: "tokens found dead, then registered again and sent a newer notification"
    ) { stage, size in
        var outcome = Outcome(scenario: "dead-then-revived")
        let devices = ChaosTokens.apns(0..<size.revived)
        let uninstalled = Array(devices.prefix(max(size.revived / 20, 10)))
        let reinstalled = Array(uninstalled.prefix(uninstalled.count / 2))
        let stillGone = Array(uninstalled.dropFirst(reinstalled.count))
        return try await Fleet.with(stage, name: "dead-then-revived", faults: APNsSimulatorFaults(latency: size.latency)) { fleet in
            try fleet.addApp("reinstall")
            try fleet.send("old", app: "reinstall", tokens: devices)
            for token in uninstalled { fleet.apns.unregister(deviceToken: token.hex) }
            let workers = try fleet.startWorkers(1, lease: 10)
            let first = try fleet.queueRetraction(of: "old", app: "reinstall")
            guard try await fleet.waitUntilFinished(first, limit: .seconds(600)) != nil else {
                throw ChaosError("the first retraction did not finish")
            }
            // Half of them install the app again, with the same token, and everyone is sent a newer message.
            for token in reinstalled { fleet.apns.register(deviceToken: token.hex) }
            try fleet.send("new", app: "reinstall", tokens: devices)
            let id = try fleet.queueRetraction(of: "new", app: "reinstall")
            var seconds = 0.0
            let finished = try await fleet.waitUntilFinished(id, limit: .seconds(600)) { _, elapsed in seconds = elapsed.inSeconds }
            let again = try fleet.queueRetraction(of: "old", app: "reinstall")
            let secondOld = try await fleet.waitUntilFinished(again, limit: .seconds(600))
            for worker in workers { await worker.stop() }
            let account = try fleet.account(id)
            let oldAccount = try fleet.account(again)
            // The devices whose app is gone show nothing on a real phone: what counts is the reachable ones.
            let reachable = devices.filter { !stillGone.contains($0) }
            let screen = await fleet.screen(of: "new", apnsDevices: reachable)
            outcome.check(Fleet.Run(id: id, retraction: finished, seconds: seconds), account: account, screen: screen, maxDuplicates: 0)
            if (account.sent, account.unregistered, account.skipped) != (reachable.count, stillGone.count, stillGone.count) {
                outcome.problems.append(
                    "the newer retraction: sent \(account.sent), unregistered \(account.unregistered) (skipped \(account.skipped)); expected \(reachable.count), \(stillGone.count) (\(stillGone.count))"
                )
            }
            if secondOld?.state != .done || (oldAccount.sent, oldAccount.skipped) != (devices.count - uninstalled.count, uninstalled.count)
            {
                outcome.problems.append(
                    "the old one again: sent \(oldAccount.sent), skipped \(oldAccount.skipped); expected \(devices.count - uninstalled.count), \(uninstalled.count)"
                )
            }
            outcome.notes.append(
                "\(uninstalled.count) uninstalled, \(reinstalled.count) of them reinstalled: the newer retraction reached them, skipped \(account.skipped); the old one again skipped \(oldAccount.skipped)"
            )
            return outcome
        }
    }

    static let poison = Scenario(
        name: "poison", summary: "a work item whose result the database refuses every time"
    ) { stage, size in
        var outcome = Outcome(scenario: "poison")
        let devices = ChaosTokens.apns(0..<size.poison)
        let dead = devices[devices.count / 2]
        let attempts = 4
        return try await Fleet.with(stage, name: "poison", faults: APNsSimulatorFaults(latency: size.latency)) { fleet in
            try fleet.addApp("poison")
            try fleet.send("m", app: "poison", tokens: devices)
            fleet.apns.unregister(deviceToken: dead.hex)
            // The page holding the uninstalled device can never be finished: the ledger refuses to mark it dead.
            try await fleet.execute(
                """
                CREATE FUNCTION refuse_dead_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'the ledger refuses this token (a simulated poison item)'; END $$
                """)
            try await fleet.execute(
                "CREATE TRIGGER refuse_dead_tokens BEFORE INSERT ON dead_tokens FOR EACH ROW EXECUTE FUNCTION refuse_dead_tokens()")
            let run = try await fleet.retract("m", app: "poison", lease: 3, extra: ["--item-attempts", "\(attempts)"])
            let account = try fleet.account(run.id)
            let screen = await fleet.screen(of: "m", apnsDevices: devices.filter { $0 != dead })
            // The poison page's devices are counted failed (they were sent at every attempt, so they show nothing).
            outcome.check(run, account: account, screen: screen, expectFailed: 1...pageSize, maxDuplicates: attempts * pageSize)
            if !account.failures.keys.allSatisfy({ $0.hasPrefix("given up after \(attempts) attempts: ") }) {
                outcome.problems.append("failures \(account.failures) are not the given-up item's")
            }
            outcome.notes.append("failed: \(account.failures.map { "\($0.value) × \($0.key.prefix(90))" }.joined(separator: "; "))")
            return outcome
        }
    }
}

extension Duration {
    /// The duration in seconds, for the table.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
