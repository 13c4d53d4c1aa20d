import Foundation
import NIOCore
import PostgresNIO
import RetractKit

/// A retraction as one device sees it: only the references it received.
package struct DeviceRetraction: Hashable, Sendable {
    package var id: UUID
    package var references: [ReferenceID]
    package var retractedAt: Date

    package init(id: UUID, references: [ReferenceID], retractedAt: Date) {
        self.id = id
        self.references = references
        self.retractedAt = retractedAt
    }
}

/// Where a device's feed of retractions stopped: after this retraction, in
/// the order their transactions were assigned (PostgreSQL's `xid8`). Travels
/// as an opaque string.
package struct DeviceFeedCursor: Hashable, Sendable {
    package var transaction: UInt64
    package var id: UUID

    package init(transaction: UInt64, id: UUID) {
        self.transaction = transaction
        self.id = id
    }

    /// The start of the feed.
    package static let start = DeviceFeedCursor(transaction: 0, id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))

    /// `v1.<transaction>.<id>`, base64url without padding.
    package var encoded: String {
        Data("v1.\(transaction).\(id.uuidString.lowercased())".utf8).base64URLEncodedString()
    }

    /// Reads a cursor made by ``encoded``; nil for anything else.
    package init?(encoded: String) {
        guard encoded.count <= 128, let data = Data(base64URLEncoded: encoded), let text = String(data: data, encoding: .utf8) else {
            return nil
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        // xid8 stays below 2^63 in practice; anything larger is not one of ours.
        guard parts.count == 3, parts[0] == "v1", let transaction = UInt64(parts[1]), transaction <= UInt64(Int64.max),
            let id = UUID(uuidString: String(parts[2]))
        else { return nil }
        self.init(transaction: transaction, id: id)
    }
}

extension RetractStore {
    /// The retractions of an app that named a reference `token` received,
    /// after `cursor`, in the order their transactions began; dry runs are
    /// left out. At most `limit`, and whether more follow.
    ///
    /// Only retractions made before the oldest transaction still running are
    /// listed: one still counting its devices may commit after a later one,
    /// and must not fall behind a cursor that moved on. The feed trails the
    /// ledger by the longest running transaction.
    ///
    /// The device's references come from the ledger's index by device, and
    /// the retractions that name any of them from the index on their
    /// references; a retraction by selector is listed with the references
    /// of the device's deliveries it takes, found through the index of
    /// retractions by selector from the labels the device's deliveries
    /// carry. The cost follows what the device received, not how many
    /// retractions the app has made.
    package func retractions(
        forDevice token: DeviceToken, appID: Int64, after cursor: DeviceFeedCursor = .start, limit: Int
    ) async throws(StoreError) -> (retractions: [DeviceRetraction], cursor: DeviceFeedCursor, hasMore: Bool) {
        precondition(limit > 0, "a page holds at least one retraction")
        let bytes = ByteBuffer(bytes: token.bytes)
        let after = String(cursor.transaction)
        let query: PostgresQuery = """
            WITH mine AS (
                SELECT coalesce(array_agg(DISTINCT reference), '{}') AS refs FROM deliveries WHERE app_id = \(appID) AND token = \(bytes)
            ),
            labelled AS (
                SELECT p.kind, p.value, d.reference, d.sent_at
                FROM deliveries d
                CROSS JOIN LATERAL (VALUES ('thread', d.thread), ('sender', d.sender), ('recipient', d.recipient), ('campaign', d.campaign))
                     AS p (kind, value)
                WHERE d.app_id = \(appID) AND d.token = \(bytes) AND p.value IS NOT NULL
            ),
            listed AS (
                SELECT r.id, r.created_at, r.created_xid,
                       ARRAY(SELECT x FROM (SELECT unnest(r.refs) INTERSECT SELECT unnest(mine.refs)) AS s (x) ORDER BY x) AS refs
                FROM retractions r, mine
                WHERE r.app_id = \(appID) AND NOT r.dry_run AND r.refs && mine.refs
                UNION ALL
                SELECT r.id, r.created_at, r.created_xid,
                       ARRAY(SELECT DISTINCT l.reference FROM labelled l
                             WHERE l.kind = r.selector_kind AND l.value = r.selector_value
                               AND l.sent_at >= coalesce(r.sent_after, '-infinity') AND l.sent_at < r.sent_before
                             ORDER BY 1)
                FROM (SELECT DISTINCT kind, value FROM labelled) k
                JOIN retractions r ON r.app_id = \(appID) AND r.selector_kind = k.kind AND r.selector_value = k.value AND NOT r.dry_run
            )
            SELECT id, created_at, created_xid::text, refs FROM listed
            WHERE cardinality(refs) > 0
              AND created_xid < pg_snapshot_xmin(pg_current_snapshot())
              AND (created_xid, id) > (\(after)::xid8, \(cursor.id))
            ORDER BY created_xid, id
            LIMIT \(limit + 1)
            """
        return try await perform("reading the retractions of a device", idempotent: true) { [self] in
            var found: [(DeviceRetraction, UInt64)] = []
            let rows = try await client.query(query, logger: logger)
            for try await (id, createdAt, transaction, refs) in rows.decode((UUID, Date, String, [String]).self) {
                found.append(
                    (DeviceRetraction(id: id, references: refs.map { ReferenceID($0) }, retractedAt: createdAt), UInt64(transaction) ?? 0))
            }
            let hasMore = found.count > limit
            let page = Array(found.prefix(limit))
            let next = page.last.map { DeviceFeedCursor(transaction: $0.1, id: $0.0.id) } ?? cursor
            return (page.map(\.0), next, hasMore)
        }
    }
}
