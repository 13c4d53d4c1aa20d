import Foundation
import NIOCore
import PostgresNIO
import RetractKit

/// A retraction as one device sees it: only the references it received.
public struct DeviceRetraction: Hashable, Sendable {
    public var id: UUID
    public var references: [ReferenceID]
    public var retractedAt: Date

    public init(id: UUID, references: [ReferenceID], retractedAt: Date) {
        self.id = id
        self.references = references
        self.retractedAt = retractedAt
    }
}

/// Where a device's feed of retractions stopped: after this retraction.
/// Travels as an opaque string; the time is kept in whole microseconds, as
/// PostgreSQL keeps it, so no retraction is skipped or repeated by rounding.
public struct DeviceFeedCursor: Hashable, Sendable {
    public var microseconds: Int64
    public var id: UUID

    public init(microseconds: Int64, id: UUID) {
        self.microseconds = microseconds
        self.id = id
    }

    /// The start of the feed.
    public static let start = DeviceFeedCursor(microseconds: .min, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))

    /// `v1.<microseconds>.<id>`, base64url without padding.
    public var encoded: String {
        let text = "v1.\(microseconds).\(id.uuidString.lowercased())"
        return Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Reads a cursor made by ``encoded``; nil for anything else.
    public init?(encoded: String) {
        guard encoded.count <= 128 else { return nil }
        var base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8) else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", let microseconds = Int64(parts[1]), let id = UUID(uuidString: String(parts[2])) else {
            return nil
        }
        self.init(microseconds: microseconds, id: id)
    }
}

extension RetractStore {
    /// The retractions of an app that named a reference `token` received,
    /// after `cursor`, oldest first; dry runs are left out. At most `limit`,
    /// and whether more follow.
    ///
    /// The device's references come from the ledger's index by device, and
    /// the retractions that name any of them from the index on their
    /// references: the cost follows what the device received, not how many
    /// retractions the app has made.
    public func retractions(
        forDevice token: DeviceToken, appID: Int64, after cursor: DeviceFeedCursor = .start, limit: Int
    ) async throws(StoreError) -> (retractions: [DeviceRetraction], cursor: DeviceFeedCursor, hasMore: Bool) {
        precondition(limit > 0, "a page holds at least one retraction")
        let bytes = ByteBuffer(bytes: token.bytes)
        // NULL stands for the start; otherwise the cursor's exact microsecond.
        let after: Int64? = cursor == .start ? nil : cursor.microseconds
        let query: PostgresQuery = """
            WITH mine AS (
                SELECT coalesce(array_agg(DISTINCT reference), '{}') AS refs FROM deliveries WHERE app_id = \(appID) AND token = \(bytes)
            )
            SELECT r.id, r.created_at, (extract(epoch FROM r.created_at) * 1000000)::bigint,
                   ARRAY(SELECT x FROM (SELECT unnest(r.refs) INTERSECT SELECT unnest(mine.refs)) AS s (x) ORDER BY x)
            FROM retractions r, mine
            WHERE r.app_id = \(appID) AND NOT r.dry_run AND r.refs && mine.refs
              AND (r.created_at, r.id) > (
                  coalesce(timestamptz 'epoch' + \(after)::bigint * interval '1 microsecond', '-infinity'::timestamptz),
                  \(cursor.id))
            ORDER BY r.created_at, r.id
            LIMIT \(limit + 1)
            """
        return try await perform("reading the retractions of a device", idempotent: true) {
            var found: [(DeviceRetraction, Int64)] = []
            let rows = try await client.query(query, logger: logger)
            for try await (id, createdAt, microseconds, refs) in rows.decode((UUID, Date, Int64, [String]).self) {
                found.append((DeviceRetraction(id: id, references: refs.map { ReferenceID($0) }, retractedAt: createdAt), microseconds))
            }
            let hasMore = found.count > limit
            let page = Array(found.prefix(limit))
            let next = page.last.map { DeviceFeedCursor(microseconds: $0.1, id: $0.0.id) } ?? cursor
            return (page.map(\.0), next, hasMore)
        }
    }
}
