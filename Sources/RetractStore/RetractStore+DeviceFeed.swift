import Crypto
import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

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
        // Byte by byte: a phone sends one with nearly every read.
        guard encoded.utf8.count <= 128, let data = Data(base64URLEncoded: encoded) else { return nil }
        let parts = data.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        // xid8 stays below 2^63 in practice; anything larger is not one of ours.
        guard parts.count == 3, parts[0].elementsEqual("v1".utf8), let transaction = UInt64(String(decoding: parts[1], as: UTF8.self)),
            transaction <= UInt64(Int64.max), let id = UUID(uuidString: String(decoding: parts[2], as: UTF8.self))
        else { return nil }
        self.init(transaction: transaction, id: id)
    }
}

/// One page of a device's feed.
package struct DeviceFeedPage: Hashable, Sendable {
    package var retractions: [DeviceRetraction]
    /// Where the next page starts: after the last retraction listed, or
    /// where this one started when it listed none.
    package var cursor: DeviceFeedCursor
    package var hasMore: Bool
    /// The oldest transaction still running when the page was read
    /// (`pg_snapshot_xmin`): every retraction before it was looked at, and a
    /// retraction not listed, for this device, comes after it.
    package var horizon: UInt64

    package init(retractions: [DeviceRetraction], cursor: DeviceFeedCursor, hasMore: Bool, horizon: UInt64) {
        self.retractions = retractions
        self.cursor = cursor
        self.hasMore = hasMore
        self.horizon = horizon
    }
}

extension RetractStore {
    /// The retractions of an app that took a delivery to `token`, after
    /// `cursor`, in the order their transactions began; dry runs are left
    /// out. At most `limit`, each with the references of the device's
    /// deliveries it took, and whether more follow.
    ///
    /// Only retractions made before the oldest transaction still running are
    /// listed: one still counting its devices may commit after a later one,
    /// and must not fall behind a cursor that moved on. The feed trails the
    /// ledger by the longest running transaction.
    ///
    /// One range scan of `device_feed` (migration 0017) by app, token and
    /// place, in a statement prepared once per connection of the feed's own
    /// pool (``feedClient``): the cost follows the page, not what the device
    /// received nor how many retractions the app made. Reads that come while
    /// the pool's statements all run are read together, by the next one
    /// (``StatementBatches``), in one snapshot.
    ///
    /// `abandonWhen`: see ``AbandonWhen``; a statement reading several pages
    /// is given up when any of theirs says so.
    package func retractions(
        forDevice token: DeviceToken, appID: Int64, after cursor: DeviceFeedCursor = .start, limit: Int, abandonWhen: AbandonWhen? = nil
    ) async throws(StoreError) -> DeviceFeedPage {
        precondition(limit > 0, "a page holds at least one retraction")
        let ask = FeedPageAsk(appID: appID, token: ByteBuffer(bytes: token.bytes), after: cursor, limit: limit, abandonWhen: abandonWhen)
        return try await feedReads.answer(ask) { asks in await readFeedPages(asks) }
    }

    /// The pages `asks` ask for, in one statement; one answer each, the same
    /// failure for all when the statement fails.
    private func readFeedPages(_ asks: [FeedPageAsk]) async -> [Result<DeviceFeedPage, StoreError>] {
        let abandons = asks.compactMap(\.abandonWhen)
        let abandonWhen: AbandonWhen? = abandons.isEmpty ? nil : { @Sendable in abandons.contains { $0() } }
        let operation = asks.count == 1 ? "reading the retractions of a device" : "reading the retractions of \(asks.count) devices"
        do throws(StoreError) {
            let statement = DeviceFeedStatement(asks: asks)
            let pages = try await performFeedRead(operation, abandonWhen: abandonWhen) { [self] in
                var found = Array(repeating: [(DeviceRetraction, UInt64)](), count: asks.count)
                var horizon: UInt64 = 0
                for try await (ask, xmin, id, createdAt, transaction, refs) in try await feedClient.execute(statement, logger: logger) {
                    horizon = UInt64(xmin) ?? 0
                    guard let id, let createdAt, let transaction, let refs, found.indices.contains(ask - 1) else { continue }
                    let retraction = DeviceRetraction(id: id, references: refs.map { ReferenceID($0) }, retractedAt: createdAt)
                    found[ask - 1].append((retraction, UInt64(transaction) ?? 0))
                }
                return zip(asks, found).map { ask, found in
                    let page = Array(found.prefix(ask.limit))
                    let next = page.last.map { DeviceFeedCursor(transaction: $0.1, id: $0.0.id) } ?? ask.after
                    return DeviceFeedPage(retractions: page.map(\.0), cursor: next, hasMore: found.count > ask.limit, horizon: horizon)
                }
            }
            return pages.map { .success($0) }
        } catch {
            return Array(repeating: .failure(error), count: asks.count)
        }
    }

    /// The newest place in the feed of each of `apps`: the `created_xid` of
    /// its newest committed retraction that is not a dry run nor an edit, or
    /// the transaction of its newest read (migration 0025) when later; 0 for
    /// an app without either.
    package func newestFeedPlaces(apps: [Int64]) async throws(StoreError) -> [Int64: UInt64] {
        try await performFeedRead("reading the newest retraction of \(apps.count) apps") { [self] in
            var newest: [Int64: UInt64] = [:]
            let rows = try await feedClient.query(
                """
                SELECT a.id, greatest((SELECT max(r.created_xid) FROM retractions r WHERE r.app_id = a.id AND NOT r.dry_run AND r.edit_body IS NULL),
                                      (SELECT max(m.fed_xid) FROM read_marks m WHERE m.app_id = a.id))::text
                FROM unnest(\(apps)::bigint[]) AS a (id)
                """, logger: logger)
            for try await (app, xid) in rows.decode((Int64, String?).self) { newest[app] = xid.flatMap { UInt64($0) } ?? 0 }
            return newest
        }
    }
}

/// One page of a device's feed, as ``StatementBatches`` is asked for it.
struct FeedPageAsk: Sendable {
    var appID: Int64
    var token: ByteBuffer
    var after: DeviceFeedCursor
    var limit: Int
    var abandonWhen: RetractStore.AbandonWhen?
}

/// Pages of the device feed, as a statement each connection prepares once:
/// planning it over every day partition cost more than running it.
///
/// A row per retraction listed, by page (numbered from 1 in the order
/// asked), and one for a page that lists none; each row carries the
/// snapshot's horizon. Each page's aggregate runs in the primary key's
/// order, so its scan stops after `limit + 1` retractions (the one more
/// says whether more follow).
private struct DeviceFeedStatement: PostgresPreparedStatement {
    static let sql = """
        WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
        SELECT a.n::int8, h.xmin::text, p.retraction_id, p.retracted_at, p.retraction_xid::text, p.refs
        FROM horizon h
        CROSS JOIN unnest($1::int8[], $2::bytea[], $3::text[], $4::uuid[], $5::int4[]) WITH ORDINALITY AS a (app_id, token, xid, id, rows, n)
        LEFT JOIN LATERAL (
            SELECT f.retraction_xid, f.retraction_id, min(f.retracted_at) AS retracted_at,
                   array_agg(DISTINCT f.reference ORDER BY f.reference) AS refs
            FROM device_feed f
            WHERE f.app_id = a.app_id AND f.token = a.token AND (f.retraction_xid, f.retraction_id) > (a.xid::xid8, a.id)
              AND f.retraction_xid < h.xmin
            GROUP BY f.retraction_xid, f.retraction_id
            ORDER BY f.retraction_xid, f.retraction_id
            LIMIT a.rows
        ) p ON true
        ORDER BY a.n, p.retraction_xid, p.retraction_id
        """
    typealias Row = (Int, String, UUID?, Date?, String?, [String]?)
    /// Named once: PostgresNIO's default name is the type's reflected name, made again for every call.
    static let name = "retract_device_feed_pages"

    var asks: [FeedPageAsk]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(asks.map(\.appID))
        bindings.append(asks.map(\.token))
        bindings.append(asks.map { String($0.after.transaction) })
        bindings.append(asks.map(\.after.id))
        bindings.append(asks.map { Int32($0.limit + 1) })
        return bindings
    }

    /// Column by column, each of a concrete type: decoding the tuple at once
    /// goes through parameter packs, whose generic metadata the runtime looks
    /// up for every row (4 % of the server's samples on a full read).
    func decodeRow(_ row: PostgresRow) throws -> Row {
        var cells = row.makeIterator()
        func next() throws -> PostgresCell {
            guard let cell = cells.next() else { throw StoreError(.database, "reading the feed: a row with too few columns") }
            return cell
        }
        return (
            Int(try next().decode(Int64.self)), try next().decode(String.self), try next().decode(UUID?.self),
            try next().decode(Date?.self),
            try next().decode(String?.self), try next().decode([String]?.self)
        )
    }
}

/// A device token as the feed's notifications name it (migration 0017): the
/// first 8 bytes of the SHA-256 of its bytes, big-endian, as PostgreSQL's
/// `substr(sha256(token), 1, 8)`.
package enum DeviceDigest {
    package static func of(_ token: DeviceToken) -> UInt64 {
        SHA256.hash(data: token.bytes).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
