import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import RetractModel
import RetractStore

/// The retractions this process answered `202` for in the last hour, so
/// that one the ledger loses is seen and said, not silently gone.
///
/// With asynchronous replication a failover loses what the old primary
/// acknowledged in its last moments (docs/operations.md): a retraction the
/// API accepted may not exist on the promoted standby. When the ping finds
/// another server behind the database address (``DatabaseHealth/serversSeen``),
/// the ids remembered here are looked up there once it takes writes; each
/// one missing is logged as an error naming it, counted in
/// `retract_retractions_lost_total`, and `GET /v1/retractions/{id}` answers
/// it `410 retraction-lost` instead of 404, so that whoever follows it
/// learns to make it again.
final class AcknowledgedRetractions: Sendable {
    struct Entry: Hashable, Sendable {
        var id: UUID
        var appID: Int64
        var app: String
        var acknowledgedAt: Date
    }

    private struct State {
        var recent: [Entry] = []
        var lost: [UUID: Entry] = [:]
        /// ``DatabaseHealth/serversSeen`` when the ids were last looked up.
        var checkedServers = 0
    }

    /// How long an acknowledged retraction is remembered: far longer than
    /// any replication lag a failover could lose.
    static let window: TimeInterval = 3600
    /// At most this many are remembered, and as many lost ones.
    static let capacity = 100_000

    private let state = NIOLockedValueBox(State())
    private let counter: Counter
    private let logger: Logger

    init(metricsFactory: any MetricsFactory, logger: Logger) {
        counter = Counter(label: "retract_retractions_lost_total", dimensions: [], factory: metricsFactory)
        self.logger = logger
    }

    /// Remembers a retraction the API answered 202 for.
    func remember(_ id: UUID, appID: Int64, app: String, at now: Date = Date()) {
        state.withLockedValue { state in
            // Oldest first: pruned a minute's worth at a time, not at every call.
            if let oldest = state.recent.first, now.timeIntervalSince(oldest.acknowledgedAt) > Self.window + 60 {
                state.recent.removeAll { now.timeIntervalSince($0.acknowledgedAt) > Self.window }
            }
            if state.recent.count >= Self.capacity { state.recent.removeFirst(state.recent.count - Self.capacity + 1) }
            state.recent.append(Entry(id: id, appID: appID, app: app, acknowledgedAt: now))
        }
    }

    /// The lost retraction with `id`, if it is one.
    func lost(_ id: UUID) -> Entry? {
        state.withLockedValue { $0.lost[id] }
    }

    /// Looks the remembered retractions up once after the database became
    /// another server (`serversSeen` grew) and takes writes; returns those
    /// the ledger no longer has. A lookup that fails is tried at the next call.
    @discardableResult
    func check(_ store: RetractStore, serversSeen: Int, writable: Bool) async -> [Entry] {
        let entries: [Entry]? = state.withLockedValue { state in
            guard writable, serversSeen != state.checkedServers else { return nil }
            return state.recent
        }
        guard let entries else { return [] }
        let found: Set<UUID>
        do {
            found = try await store.existingRetractions(among: entries.map(\.id))
        } catch {
            logger.warning(
                "could not look up the retractions acknowledged before the database changed; trying again",
                metadata: ["error": "\(error.message)"])
            return []
        }
        let missing = entries.filter { !found.contains($0.id) }
        state.withLockedValue { state in
            state.checkedServers = serversSeen
            let gone = Set(missing.map(\.id))
            state.recent.removeAll { gone.contains($0.id) }
            for entry in missing where state.lost.count < Self.capacity { state.lost[entry.id] = entry }
        }
        for entry in missing {
            counter.increment()
            logger.error(
                "a retraction answered 202 is not in the ledger: the database lost it (a failover with asynchronous replication); make it again",
                metadata: [
                    "retraction": "\(entry.id.uuidString.lowercased())", "app": "\(entry.app)",
                    "acknowledged": "\(entry.acknowledgedAt.formatted(.iso8601))",
                ])
        }
        if !entries.isEmpty {
            logger.notice(
                "retractions acknowledged before the database changed looked up",
                metadata: ["acknowledged": "\(entries.count)", "lost": "\(missing.count)"])
        }
        return missing
    }
}
