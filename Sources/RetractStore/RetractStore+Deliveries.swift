import Foundation
import NIOCore
import PostgresNIO
import RetractKit

extension RetractStore {
    /// Records deliveries in one round trip. A delivery recorded before (same
    /// app, reference, token and day) is left as it is.
    ///
    /// - Returns: how many deliveries were new.
    /// - Throws: ``StoreError/Code/invalidInput`` naming the first bad
    ///   delivery (nothing is written then), ``StoreError/Code/notFound`` for an
    ///   unknown app.
    @discardableResult
    public func record(_ deliveries: [Delivery], now: Date = Date()) async throws(StoreError) -> Int {
        guard !deliveries.isEmpty else { return 0 }
        try validate(deliveries, now: now)
        try await checkAppsExist(Set(deliveries.map(\.appID)))
        try await ensurePartitions(forDays: Set(deliveries.map { UTCDay(containing: $0.sentAt) }))

        var appIDs: [Int64] = []
        var references: [String] = []
        var tokens: [ByteBuffer] = []
        var sentAt: [Date] = []
        appIDs.reserveCapacity(deliveries.count)
        references.reserveCapacity(deliveries.count)
        tokens.reserveCapacity(deliveries.count)
        sentAt.reserveCapacity(deliveries.count)
        for delivery in deliveries {
            appIDs.append(delivery.appID)
            references.append(delivery.reference.rawValue)
            tokens.append(ByteBuffer(bytes: delivery.token.bytes))
            sentAt.append(delivery.sentAt)
        }
        let query: PostgresQuery = """
            WITH inserted AS (
                INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at)
                SELECT a, r, t, (s AT TIME ZONE 'UTC')::date, s
                FROM unnest(\(appIDs)::bigint[], \(references)::text[], \(tokens)::bytea[], \(sentAt)::timestamptz[]) AS u (a, r, t, s)
                ON CONFLICT DO NOTHING
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """
        return try await perform("recording \(deliveries.count) deliveries", idempotent: true) {
            try await client.query(query, logger: logger).values(of: Int.self).first ?? 0
        }
    }

    /// One page of the devices that received any of `references` in the app,
    /// in token order after `after` and up to `through` (inclusive), each device
    /// once with all of its references. Dead tokens are skipped but counted.
    ///
    /// Each reference is read through the primary key from `after` on, at most
    /// `limit` tokens each, so a page costs the same early or late in a
    /// reference of millions.
    public func devicePage(
        appID: Int64,
        references: [ReferenceID],
        after: DeviceToken? = nil,
        through: DeviceToken? = nil,
        limit: Int = 1000
    ) async throws(StoreError) -> DevicePage {
        precondition(limit > 0, "a page holds at least one device")
        let refs = Array(Set(references.map(\.rawValue))).sorted()
        let afterBytes = after.map { ByteBuffer(bytes: $0.bytes) }
        let throughBytes = through.map { ByteBuffer(bytes: $0.bytes) }
        let query: PostgresQuery = """
            SELECT x.token, array_agg(x.reference ORDER BY x.reference),
                   EXISTS (SELECT 1 FROM dead_tokens dt WHERE dt.app_id = \(appID) AND dt.token = x.token)
            FROM (
                SELECT r.ref AS reference, d.token
                FROM unnest(\(refs)::text[]) AS r (ref)
                CROSS JOIN LATERAL (
                    SELECT DISTINCT token FROM deliveries
                    WHERE app_id = \(appID) AND reference = r.ref
                      AND (\(afterBytes)::bytea IS NULL OR token > \(afterBytes)::bytea)
                      AND (\(throughBytes)::bytea IS NULL OR token <= \(throughBytes)::bytea)
                    ORDER BY token
                    LIMIT \(limit)
                ) d
            ) x
            GROUP BY x.token
            ORDER BY x.token
            LIMIT \(limit)
            """
        return try await perform("reading devices of \(Self.describe(references))", idempotent: true) {
            var page = DevicePage(devices: [], deadSkipped: 0, last: nil, mayHaveMore: false)
            var rows = 0
            for try await (token, references, isDead) in try await client.query(query, logger: logger).decode(
                (ByteBuffer, [String], Bool).self)
            {
                rows += 1
                let deviceToken = DeviceToken(bytes: Array(token.readableBytesView))
                page.last = deviceToken
                if isDead {
                    page.deadSkipped += 1
                } else {
                    page.devices.append(DeviceReferences(token: deviceToken, references: references.map { ReferenceID($0) }))
                }
            }
            page.mayHaveMore = rows == limit
            return page
        }
    }

    /// Every device of `references`, page by page; memory holds one page.
    public func devices(
        appID: Int64,
        references: [ReferenceID],
        after: DeviceToken? = nil,
        through: DeviceToken? = nil,
        pageSize: Int = 1000
    ) -> DeviceStream {
        DeviceStream(store: self, appID: appID, references: references, after: after, through: through, pageSize: pageSize)
    }

    /// How many live devices received any of `references`.
    public func countDevices(appID: Int64, references: [ReferenceID]) async throws(StoreError) -> Int {
        let refs = references.map(\.rawValue)
        return try await perform("counting devices of \(Self.describe(references))", idempotent: true) {
            try await client.query(
                """
                SELECT count(*) FROM (
                    SELECT DISTINCT token FROM deliveries WHERE app_id = \(appID) AND reference = ANY(\(refs)::text[])
                ) d
                WHERE NOT EXISTS (SELECT 1 FROM dead_tokens dt WHERE dt.app_id = \(appID) AND dt.token = d.token)
                """,
                logger: logger
            ).values(of: Int.self).first ?? 0
        }
    }

    // MARK: - Checks before writing

    private func validate(_ deliveries: [Delivery], now: Date) throws(StoreError) {
        let oldest = UTCDay(containing: now).adding(days: -(retention.days - 1)).start
        let newest = now.addingTimeInterval(24 * 60 * 60)
        for (index, delivery) in deliveries.enumerated() {
            let field = "deliveries[\(index)]"
            if let problem = Delivery.problem(with: delivery.reference) {
                throw StoreError(.invalidInput, "\(field).reference: \(problem)")
            }
            if delivery.token.bytes.isEmpty || delivery.token.bytes.count > Delivery.maximumTokenLength {
                throw StoreError(
                    .invalidInput,
                    "\(field).token: \(delivery.token.bytes.count) bytes; a device token has 1 to \(Delivery.maximumTokenLength)")
            }
            if delivery.sentAt < oldest {
                throw StoreError(
                    .invalidInput,
                    "\(field).sentAt: \(delivery.sentAt) is older than the \(retention.days)-day retention; it would be dropped at once")
            }
            if delivery.sentAt > newest {
                throw StoreError(.invalidInput, "\(field).sentAt: \(delivery.sentAt) is more than a day in the future")
            }
        }
    }

    private func checkAppsExist(_ ids: Set<Int64>) async throws(StoreError) {
        let ids = Array(ids)
        let found = try await perform("checking apps", idempotent: true) {
            try await client.query("SELECT id FROM apps WHERE id = ANY(\(ids)::bigint[])", logger: logger).values(of: Int64.self)
        }
        if let missing = Set(ids).subtracting(found).sorted().first {
            throw StoreError(.notFound, "app \(missing) does not exist")
        }
    }

    static func describe(_ references: [ReferenceID]) -> String {
        let shown = references.prefix(3).map { "\"\($0)\"" }.joined(separator: ", ")
        return references.count > 3 ? "\(shown) and \(references.count - 3) more" : shown
    }
}

/// The devices of some references, one ``DevicePage`` at a time.
public struct DeviceStream: AsyncSequence, Sendable {
    public typealias Element = DevicePage

    let store: RetractStore
    let appID: Int64
    let references: [ReferenceID]
    let after: DeviceToken?
    let through: DeviceToken?
    let pageSize: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: DeviceStream
        var cursor: DeviceToken?
        var finished = false

        public mutating func next() async throws(StoreError) -> DevicePage? {
            guard !finished else { return nil }
            let page = try await stream.store.devicePage(
                appID: stream.appID, references: stream.references, after: cursor, through: stream.through, limit: stream.pageSize)
            cursor = page.last
            finished = !page.mayHaveMore
            return page.last == nil ? nil : page
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: self, cursor: after)
    }
}
