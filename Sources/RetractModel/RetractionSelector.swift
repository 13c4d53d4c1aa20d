import Foundation

/// Every delivery of an app with one label, sent within a time range: what a
/// retraction by selector retracts instead of a list of references.
package struct RetractionSelector: Hashable, Sendable {
    /// The label a selector selects on; its raw value is the field, the
    /// flag and the ledger's column.
    package enum Kind: String, Hashable, Sendable, CaseIterable, Codable {
        case thread, sender, recipient, campaign

        /// The deliveries column it selects on.
        package var column: String { rawValue }
    }

    package var kind: Kind
    package var value: String
    /// Deliveries sent at or after this time; from the start of retention when nil.
    package var sentAfter: Date?
    /// Deliveries sent before this time. When a retraction is made without
    /// one, the ledger keeps the time it was made: a message sent after
    /// that is never taken.
    package var sentBefore: Date?

    package init(_ kind: Kind, _ value: String, sentAfter: Date? = nil, sentBefore: Date? = nil) {
        self.kind = kind
        self.value = value
        self.sentAfter = sentAfter
        self.sentBefore = sentBefore
    }

    /// Whether it takes a whole conversation as it stood when the retraction
    /// was made at `createdAt`: a thread, with no start time and no end
    /// before then. Only then may the thread's id stand for what it took on
    /// a phone, which removes every notification of the thread it shows.
    package func takesWholeThread(createdAt: Date) -> Bool {
        kind == .thread && sentAfter == nil && (sentBefore.map { $0 >= createdAt } ?? true)
    }

    /// What is wrong with the selector, as (field, problem), or nil: a
    /// label as a delivery keeps it, and a range that is not empty.
    package func problem(now: Date = Date()) -> (field: String, problem: String)? {
        if let problem = DeliveryLabels.problem(with: value) { return (kind.rawValue, problem) }
        if let sentBefore, sentBefore > now.addingTimeInterval(Self.clockTolerance) {
            return ("sentBefore", "\(Self.describe(sentBefore)) is in the future; a retraction takes back what was sent before it")
        }
        if let sentAfter, sentAfter >= (sentBefore ?? now) {
            return (
                "sentAfter",
                "\(Self.describe(sentAfter)) is not before \(sentBefore.map(Self.describe) ?? "now"); nothing was sent in between"
            )
        }
        return nil
    }

    /// How far ahead of this machine's clock `sentBefore` may be: the
    /// caller's clock may run a little ahead.
    package static let clockTolerance: TimeInterval = 60

    /// `kind "value"`, for messages and logs.
    package var description: String {
        var text = "\(kind.rawValue) \"\(LedgerScope.shown(value))\""
        if let sentAfter { text += " sent from \(Self.describe(sentAfter))" }
        if let sentBefore { text += " sent before \(Self.describe(sentBefore))" }
        return text
    }

    static func describe(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }
}
