import Foundation

/// Recently retracted references with the time of their retraction, oldest
/// first, bounded by count and age. Pure value logic; ``Tombstones`` persists it.
struct TombstoneList: Codable, Equatable {
    /// `{"reference": "233", "retractedAt": 1796000000.5}`, with `"account"`
    /// for a reference of an account; what was written before accounts
    /// existed reads as the app's only account's.
    struct Entry: Codable, Equatable {
        var reference: ReferenceID
        /// Seconds since 1970.
        var retractedAt: Double
        /// The account the reference is of; nil: the app's only account.
        var account: String?
    }

    private(set) var entries: [Entry] = []

    /// Adds `references` of `account` retracted at `now` (a repeated
    /// reference moves to the newest end), then drops what is expired or
    /// beyond `limit`, oldest first. References of one retraction share a
    /// time and go in sorted order, so past the limit the later-sorting ones
    /// are kept.
    mutating func insert(
        _ references: Set<ReferenceID>, account: String? = nil, at now: Date, limit: Int, lifetime: TimeInterval
    ) {
        entries.removeAll { $0.account == account && references.contains($0.reference) }
        let time = now.timeIntervalSince1970
        entries += references.sorted().map { Entry(reference: $0, retractedAt: time, account: account) }
        prune(now: now, limit: limit, lifetime: lifetime)
    }

    mutating func prune(now: Date, limit: Int, lifetime: TimeInterval) {
        let oldestKept = now.timeIntervalSince1970 - lifetime
        entries.removeAll { $0.retractedAt <= oldestKept }
        if entries.count > limit { entries.removeFirst(entries.count - max(limit, 0)) }
    }

    func contains(_ reference: ReferenceID, account: String? = nil, now: Date, lifetime: TimeInterval) -> Bool {
        let oldestKept = now.timeIntervalSince1970 - lifetime
        return entries.contains { $0.reference == reference && $0.account == account && $0.retractedAt > oldestKept }
    }

    /// What is remembered within the lifetime, by account.
    func retracted(now: Date, lifetime: TimeInterval) -> RetractedReferences {
        let oldestKept = now.timeIntervalSince1970 - lifetime
        var retracted = RetractedReferences()
        for entry in entries where entry.retractedAt > oldestKept { retracted.insert([entry.reference], account: entry.account) }
        return retracted
    }
}
