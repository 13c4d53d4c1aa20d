import Foundation

/// What finished work items add up to, per retraction and per app: what
/// `RetractStore.finishReporting(_:)` writes in its one transaction.
/// Pure, so it is tested without a database.
package struct FinishedWork {
    /// Counts to add, per retraction.
    package var counts: [UUID: RetractionCounts] = [:]
    /// Pushes to add, per retraction.
    package var pushes: [UUID: PushesSent] = [:]
    /// Devices to try again, with their retraction.
    package var retries: [(UUID, PushRetry)] = []
    /// Tokens found dead, per app.
    package var dead: [Int64: [DeadToken]] = [:]
    /// Failures by reason, per retraction.
    package var failures: [UUID: [String: Int]] = [:]
    /// Retractions to stop, and why.
    package var stops: [UUID: String] = [:]
    /// Rests of pages that wait for their service, with their retraction.
    package var remainders: [(UUID, PageRemainder)] = []

    /// - Parameters:
    ///   - results: the results whose items the finish still held.
    ///   - appIDs: each retraction's app; dead tokens of a retraction not in it are dropped.
    package init(_ results: [WorkResult], appIDs: [UUID: Int64]) {
        for result in results {
            let id = result.item.retractionID
            if let reason = result.stopReason { stops[id] = reason }
            remainders += result.remainders.map { (id, $0) }
            counts[id, default: RetractionCounts()] += result.counts
            pushes[id, default: PushesSent()].add(result.pushes)
            retries += result.retries.map { (id, $0) }
            if let appID = appIDs[id], !result.deadTokens.isEmpty { dead[appID, default: []] += result.deadTokens }
            failures[id, default: [:]].merge(result.failures, uniquingKeysWith: +)
        }
    }

    /// Drops what it would queue for `retractions` (retries, rests of
    /// pages): those being cancelled take no new work.
    package mutating func queueNothing(for retractions: Set<UUID>) {
        guard !retractions.isEmpty else { return }
        retries.removeAll { retractions.contains($0.0) }
        remainders.removeAll { retractions.contains($0.0) }
    }
}
