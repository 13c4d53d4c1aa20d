import NIOCore
import RetractKit

/// Retraction bodies by reference list and size limit: the devices of a
/// broadcast mostly share one list, so most pushes reuse one body. At most
/// 1,024 lists are kept.
package struct BodyCache {
    let builder: PayloadBuilder
    /// The `aps` of every body: the retraction's delivery mode.
    let aps: RetractionAPS
    private var cache: [Key: [Carried]] = [:]

    /// A body and the references it carries.
    package typealias Carried = (references: [ReferenceID], body: ByteBuffer)

    package init(builder: PayloadBuilder, aps: RetractionAPS = .background) {
        self.builder = builder
        self.aps = aps
    }

    /// The bodies that carry `references`, each at most `limit` bytes (the
    /// transport's ``PushTransport/bodyLimit``).
    package mutating func bodies(for references: [ReferenceID], limit: Int) throws -> [ByteBuffer] {
        try carrying(references, limit: limit).map(\.body)
    }

    /// ``bodies(for:limit:)``, each with the references it carries.
    ///
    /// With `markingSplits`, references that need more than one body in the
    /// canonical dialect get bodies that each say the rest is in the device
    /// feed (``PayloadDialect/moreInFeedKey``): iOS may hand a suspended app
    /// only the last of them.
    package mutating func carrying(_ references: [ReferenceID], limit: Int, markingSplits: Bool = false) throws -> [Carried] {
        let marking = markingSplits && builder.dialect == .canonical
        let key = Key(references: references, limit: limit, markingSplits: marking)
        if let cached = cache[key] { return cached }
        var made = try carrying(references, limit: limit, moreInFeed: false)
        if marking, made.count > 1 { made = try carrying(references, limit: limit, moreInFeed: true) }
        if cache.count < Self.capacity { cache[key] = made }
        return made
    }

    private func carrying(_ references: [ReferenceID], limit: Int, moreInFeed: Bool) throws -> [Carried] {
        let groups = try builder.retractionReferenceGroups(for: references, limit: limit, aps: aps, moreInFeed: moreInFeed)
        let bodies = try builder.retractionBodies(for: references, limit: limit, aps: aps, moreInFeed: moreInFeed)
        return zip(groups, bodies).map { (references: $0, body: ByteBuffer(bytes: $1)) }
    }

    /// How many reference lists it keeps.
    package var count: Int { cache.count }

    static let capacity = 1024

    private struct Key: Hashable {
        var references: [ReferenceID]
        var limit: Int
        var markingSplits: Bool
    }
}
