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
    package mutating func carrying(_ references: [ReferenceID], limit: Int) throws -> [Carried] {
        let key = Key(references: references, limit: limit)
        if let cached = cache[key] { return cached }
        let groups = try builder.retractionReferenceGroups(for: references, limit: limit, aps: aps)
        let bodies = try builder.retractionBodies(for: references, limit: limit, aps: aps)
        let made = zip(groups, bodies).map { (references: $0, body: ByteBuffer(bytes: $1)) }
        if cache.count < Self.capacity { cache[key] = made }
        return made
    }

    /// How many reference lists it keeps.
    package var count: Int { cache.count }

    static let capacity = 1024

    private struct Key: Hashable {
        var references: [ReferenceID]
        var limit: Int
    }
}
