import Foundation

/// Recently retracted references with the time of their retraction, oldest
/// first, bounded by count and age. Pure value logic; ``Tombstones`` persists it.
struct TombstoneList: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var reference: ReferenceID
        /// Seconds since 1970.
        var retractedAt: Double
    }

    private(set) var entries: [Entry] = []

    /// Adds `references` retracted at `now` (a repeated reference moves to the
    /// newest end), then drops what is expired or beyond `limit`, oldest
    /// first. References of one retraction share a time and go in sorted
    /// order, so past the limit the later-sorting ones are kept.
    mutating func insert(_ references: Set<ReferenceID>, at now: Date, limit: Int, lifetime: TimeInterval) {
        entries.removeAll { references.contains($0.reference) }
        let time = now.timeIntervalSince1970
        entries += references.sorted().map { Entry(reference: $0, retractedAt: time) }
        prune(now: now, limit: limit, lifetime: lifetime)
    }

    mutating func prune(now: Date, limit: Int, lifetime: TimeInterval) {
        let oldestKept = now.timeIntervalSince1970 - lifetime
        entries.removeAll { $0.retractedAt <= oldestKept }
        if entries.count > limit { entries.removeFirst(entries.count - max(limit, 0)) }
    }

    func contains(_ reference: ReferenceID, now: Date, lifetime: TimeInterval) -> Bool {
        let oldestKept = now.timeIntervalSince1970 - lifetime
        return entries.contains { $0.reference == reference && $0.retractedAt > oldestKept }
    }
}
