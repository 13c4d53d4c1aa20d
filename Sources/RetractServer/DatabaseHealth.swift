import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import RetractModel
import RetractStore

/// Whether PostgreSQL answers, as the server's ping (every second) last saw
/// it; a request that loses its own connection answers 503 for itself only.
/// While it is down the API answers 503 at once instead of waiting on a pool
/// that cannot connect. The ping has a connection of its own
/// (``RetractStore/healthClient``): a pool that slow queries keep busy is
/// not a database that is down. Nor is one ping left unanswered: a process
/// short of CPU for a moment misses it, and while other statements are
/// answered (``RetractStore/lastAnswer``) a ping left waiting behind them
/// counts as answered. A ping that fails is down at once; a ping not answered
/// within its time is down only when the one before was not answered either.
final class DatabaseHealth: Sendable {
    private struct State {
        var up = true
        /// Why the database, up, takes no writes (a standby, read-only by
        /// default); nil when it takes them.
        var readOnly: String?
        /// When the server the ping last reached started.
        var startedAt: Date?
        /// How many times the ping found another server than before (a
        /// standby promoted behind the address, a restart).
        var serversSeen = 0
        /// Pings in a row not answered within their time.
        var unanswered = 0
        /// Requests waiting to hear that the database went down.
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let gauge: Gauge
    private let logger: Logger

    init(metricsFactory: any MetricsFactory, logger: Logger) {
        gauge = Gauge(label: "retract_database_up", dimensions: [], factory: metricsFactory)
        gauge.record(1)
        self.logger = logger
    }

    var isUp: Bool { state.withLockedValue { $0.up } }

    /// Why the database takes no writes, while it answers and refuses them:
    /// nil when it takes them (or is down, which ``isUp`` says).
    var readOnly: String? { state.withLockedValue { $0.up ? $0.readOnly : nil } }

    /// Whether writes may be attempted: the database is up and takes them.
    var isWritable: Bool { state.withLockedValue { $0.up && $0.readOnly == nil } }

    /// How many times the ping found another server than the one before:
    /// what this process wrote may be missing there (``AcknowledgedRetractions``).
    var serversSeen: Int { state.withLockedValue { $0.serversSeen } }

    /// Notes a ping's answer.
    func record(_ ping: DatabasePing) {
        record(readOnly: ping.readOnly)
        let replaced = state.withLockedValue { state in
            defer { state.startedAt = ping.startedAt }
            guard let before = state.startedAt, before != ping.startedAt else { return false }
            state.serversSeen += 1
            return true
        }
        if replaced {
            logger.warning(
                "the database answering is another server than before (a failover, or a restart)",
                metadata: ["started": "\(ping.startedAt)"])
        }
    }

    /// Notes why the database takes no writes (nil: it takes them), saying so when that changes.
    func record(readOnly reason: String?) {
        let changed = state.withLockedValue { state in
            defer { state.readOnly = reason }
            return state.readOnly != reason
        }
        guard changed else { return }
        if let reason {
            logger.error(
                "the database takes no writes; writes answer 503 and the workers claim nothing until it does",
                metadata: ["reason": "\(reason)"])
        } else {
            logger.notice("the database takes writes again")
        }
    }

    func record(up isUp: Bool, detail: String? = nil) {
        let (changed, waiters) = state.withLockedValue { state in
            defer { state.up = isUp }
            let waiters = isUp ? [] : Array(state.waiters.values)
            if !isUp { state.waiters.removeAll() }
            return (state.up != isUp, waiters)
        }
        for waiter in waiters { waiter.resume() }
        gauge.record(isUp ? 1 : 0)
        guard changed else { return }
        if isUp {
            logger.notice("the database answers again")
        } else {
            logger.error(
                "the database is unavailable; the API answers 503 until it is back", metadata: ["error": "\(detail ?? "no answer")"])
        }
    }

    /// Returns once the database is found down (at once if it is), or when cancelled.
    func waitUntilDown() async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state in
                    guard state.up, !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Runs `body` unless the database is known to be down; if it is found
    /// down meanwhile, answers 503 at once. The body, waiting on a pool that
    /// cannot connect, is cancelled and left to end on its own.
    func whileUp<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        guard isUp else { throw APIProblem.databaseUnavailable("the database is unavailable; try again shortly") }
        let outcome: Result<Value, any Error> = await firstOf(
            {
                do {
                    return .success(try await body())
                } catch {
                    return .failure(error)
                }
            },
            {
                await self.waitUntilDown()
                return .failure(APIProblem.databaseUnavailable("the database became unavailable during the request; try again shortly"))
            })
        return try outcome.get()
    }

    /// ``whileUp(_:)`` for a `body` made of statements of the ledger (the
    /// device feed's page, the hottest call): rather than a race around the
    /// call (a task group, two tasks and a waiter each time), `body` hands
    /// its statements the signal it is given, and each one's own watchdog
    /// gives it up within half a second of the database being seen down
    /// (``RetractStore/AbandonWhen``); the call is then answered 503 as
    /// ``whileUp(_:)`` answers it.
    func whileUpReading<Value: Sendable>(
        _ body: (_ abandonWhen: @escaping RetractStore.AbandonWhen) async throws -> Value
    ) async throws -> Value {
        guard isUp else { throw APIProblem.databaseUnavailable("the database is unavailable; try again shortly") }
        do {
            return try await body { [self] in !isUp }
        } catch  where !isUp {
            throw APIProblem.databaseUnavailable("the database became unavailable during the request; try again shortly")
        }
    }

    /// Runs a write's `body` unless the database is down or takes no writes
    /// (503 at once, naming why: nothing is attempted), as ``whileUp(_:)`` does.
    func whileWritable<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        if let reason = readOnly { throw APIProblem.databaseUnavailable(reason) }
        return try await whileUp(body)
    }

    /// Pings once, waiting at most `timeout`.
    func check(_ store: RetractStore, timeout: Duration = .seconds(2)) async {
        let started = ContinuousClock.now
        let failure: (detail: String, unanswered: Bool)? = await firstOf(
            { () async -> (String, Bool)? in
                do {
                    self.record(try await store.ping())
                    return nil
                } catch let error as StoreError {
                    return (error.message, false)
                } catch {
                    return ("\(error)", false)
                }
            },
            { () async -> (String, Bool)? in
                try? await Task.sleep(for: timeout)
                // The database answered another statement meanwhile: it is up.
                if let answered = store.lastAnswer, answered >= started { return nil }
                return ("no answer within \(timeout) twice in a row", true)
            })
        let unanswered = state.withLockedValue { state in
            state.unanswered = failure?.unanswered == true ? state.unanswered + 1 : 0
            return state.unanswered
        }
        // One ping left unanswered changes nothing yet.
        if unanswered == 1 { return }
        record(up: failure == nil, detail: failure?.detail)
    }
}
