import Foundation
import PostgresNIO
import RetractKit
import RetractModel

/// The deliveries a retraction takes, as a condition on rows of
/// `deliveries` for the statements that count or read them: its references,
/// or its label within its range, in the day partitions that can hold them
/// (those before the retention window are gone).
struct TakenDeliveries: Sendable {
    let target: RetractionTarget
    let appID: Int64
    /// The start of the retention window: nothing older is kept.
    let oldestKept: Date

    /// The condition on rows named `alias`, its values appended to `binds`.
    func condition(_ alias: String, binds: inout PostgresBindings) -> String {
        let app = "\(alias).app_id = \(binds.placeholder(appID))"
        switch target {
        case .references(let references):
            return app + " AND \(alias).reference = ANY(\(binds.placeholder(Array(Set(references.map(\.rawValue)))))::text[])"
        case .selector(let selector):
            let after = selector.sentAfter ?? .distantPast
            let before = selector.sentBefore ?? .distantFuture
            let firstDay = UTCDay(containing: max(after, oldestKept)).isoDate
            let lastDay = UTCDay(containing: min(before, Date().addingTimeInterval(Retention.furthestAhead))).isoDate
            // The kind is one of four column names, never text from outside.
            return app + " AND \(alias).\(selector.kind.column) = \(binds.placeholder(selector.value))"
                + " AND \(alias).sent_on >= \(binds.placeholder(firstDay))::date AND \(alias).sent_on <= \(binds.placeholder(lastDay))::date"
                + " AND \(alias).sent_at >= \(binds.placeholder(after)) AND \(alias).sent_at < \(binds.placeholder(before))"
        }
    }

    /// What the statements' logs and errors call it.
    var description: String {
        switch target {
        case .references(let references): RetractStore.describe(references)
        case .selector(let selector): selector.description
        }
    }
}

extension PostgresBindings {
    /// Appends `value` and returns its placeholder (`$3`), for a statement written piece by piece.
    mutating func placeholder(_ value: some PostgresDynamicTypeEncodable) -> String {
        append(value)
        return "$\(count)"
    }
}
