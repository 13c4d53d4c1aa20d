import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// Records deliveries in one round trip. A delivery recorded before (same
    /// app, reference, token and day) is left as it is.
    ///
    /// - Returns: how many deliveries were new.
    /// - Throws: ``StoreError/Code/invalidInput`` naming the first bad
    ///   delivery (nothing is written then), ``StoreError/Code/notFound`` for an
    ///   unknown app.
    @discardableResult
    package func record(_ deliveries: [Delivery], now: Date = Date()) async throws(StoreError) -> Int {
        try await recordReporting(deliveries, now: now).new
    }

    /// What recording a batch came to.
    package struct Recorded: Sendable, Hashable {
        /// Deliveries that were new.
        package var new = 0
        /// Retractions made of the new deliveries whose reference the app had
        /// already retracted (see ``retractLate(_:on:logger:)``); queued for workers.
        package var lateRetractions: [UUID] = []
        /// Set when the batch was not recorded because one of its references
        /// is retracted already (``RetractedReference/refuse``).
        package var refusedAsRetracted = false

        package init(new: Int = 0, lateRetractions: [UUID] = [], refusedAsRetracted: Bool = false) {
            self.new = new
            self.lateRetractions = lateRetractions
            self.refusedAsRetracted = refusedAsRetracted
        }
    }

    /// What recording does with a delivery whose reference the app has retracted already.
    package enum RetractedReference: Sendable {
        /// Record it and retract it at once (``RetractStore/retractLate(_:on:logger:)``): a caller
        /// recording what it sent.
        case retract
        /// Record nothing of the batch: a caller about to send it (`send`),
        /// which then spares those devices the notification.
        case refuse
    }

    /// ``record(_:now:)``, saying which retractions it made of late deliveries.
    package func recordReporting(
        _ deliveries: [Delivery], now: Date = Date(), ifRetracted rule: RetractedReference = .retract
    ) async throws(StoreError) -> Recorded {
        guard !deliveries.isEmpty else { return Recorded() }
        try validate(deliveries, now: now)
        try await checkAppsExist(Set(deliveries.map(\.appID)))
        try await ensurePartitions(forDays: Set(deliveries.map { UTCDay(containing: $0.sentAt) }))

        var appIDs: [Int64] = []
        var references: [String] = []
        var tokens: [ByteBuffer] = []
        var sentAt: [Date] = []
        var transports: [String] = []
        // "" for none: PostgreSQL arrays of PostgresNIO hold no NULLs, and a collapse id is never empty.
        var collapseIDs: [String] = []
        // The same for each label, only when some delivery of the batch has it.
        var labels: [RetractionSelector.Kind: [String]] = [:]
        for kind in RetractionSelector.Kind.allCases where deliveries.contains(where: { $0.labels[kind] != nil }) {
            labels[kind] = deliveries.map { $0.labels[kind] ?? "" }
        }
        transports.reserveCapacity(deliveries.count)
        appIDs.reserveCapacity(deliveries.count)
        references.reserveCapacity(deliveries.count)
        tokens.reserveCapacity(deliveries.count)
        sentAt.reserveCapacity(deliveries.count)
        for delivery in deliveries {
            appIDs.append(delivery.appID)
            references.append(delivery.reference.rawValue)
            tokens.append(ByteBuffer(bytes: delivery.token.bytes))
            sentAt.append(delivery.sentAt)
            transports.append(delivery.transport.rawValue)
            collapseIDs.append(delivery.collapseID ?? "")
        }
        // Most batches carry no collapse id and no label: their statement leaves those columns out.
        var optional: [(column: String, values: [String])] = []
        if collapseIDs.contains(where: { !$0.isEmpty }) { optional.append(("collapse_id", collapseIDs)) }
        for kind in RetractionSelector.Kind.allCases { if let values = labels[kind] { optional.append((kind.column, values)) } }
        let columns = (appIDs, references, tokens, sentAt, transports, optional)
        // The batch's insert, with `conflicts` after it.
        @Sendable func insert(_ conflicts: String) -> PostgresQuery {
            let (appIDs, references, tokens, sentAt, transports, optional) = columns
            var binds = PostgresBindings(capacity: 5 + optional.count)
            binds.append(appIDs)
            binds.append(references)
            binds.append(tokens)
            binds.append(sentAt)
            binds.append(transports)
            var names = ""
            var values = ""
            var arrays = ""
            var aliases = ""
            for (index, column) in optional.enumerated() {
                binds.append(column.values)
                names += ", \(column.column)"
                values += ", NULLIF(o\(index), '')"
                arrays += ", $\(6 + index)::text[]"
                aliases += ", o\(index)"
            }
            return PostgresQuery(
                unsafeSQL: """
                    INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport\(names))
                    SELECT a, r, t, (s AT TIME ZONE 'UTC')::date, s, x\(values)
                    FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::timestamptz[], $5::text[]::push_transport[]\(arrays))
                        AS u (a, r, t, s, x\(aliases))
                    \(conflicts)
                    """,
                binds: binds)
        }
        // Nearly every batch is new: a plain INSERT costs half of what ON
        // CONFLICT does. A batch that repeats a delivery fails whole on the
        // primary key and goes again, keeping only what is new. (A retry after
        // a lost connection lands there too, so the plain insert may be retried.)
        // Deliveries of references already retracted are retracted in the same
        // transaction: recorded, they are never left unretracted. The
        // references' locks keep a retraction of them from being made while
        // the transaction runs (see ``lockReferences(apps:references:exclusive:on:logger:)``).
        let all = NewDeliveries(
            appIDs: appIDs, references: references, tokens: tokens, sentAt: sentAt, transports: transports, collapseIDs: collapseIDs,
            labels: labels)
        let logger = logger
        // A caller about to send (`refuse`) has the edit sent after the original, once it is accepted
        // (retractSentWhileRetracted): made now, it could reach the phone first, and find nothing to edit.
        let editing = if case .retract = rule { true } else { false }
        @Sendable func refused(on connection: PostgresConnection) async throws -> Bool {
            try await Self.lockReferences(apps: all.appIDs, references: all.references, exclusive: false, on: connection, logger: logger)
            try await Self.lockLabels(all.distinctLabels, exclusive: false, on: connection, logger: logger)
            guard case .refuse = rule else { return false }
            if try await !Self.retractedReferences(apps: all.appIDs, references: all.references, on: connection, logger: logger).isEmpty {
                return true
            }
            return try await !Self.selectedDeliveries(all, on: connection, logger: logger).isEmpty
        }
        do {
            return try await perform("recording \(deliveries.count) deliveries", idempotent: true) { [self] in
                try await client.withTransaction(logger: logger) { connection in
                    if try await refused(on: connection) { return Recorded(refusedAsRetracted: true) }
                    try await connection.query(insert(""), logger: logger)
                    return Recorded(
                        new: deliveries.count,
                        lateRetractions: try await Self.retractLate(all, editing: editing, on: connection, logger: logger))
                }
            }
        } catch let error where error.code == .uniqueViolation {
            return try await perform("recording \(deliveries.count) deliveries", idempotent: true) { [self] in
                try await client.withTransaction(logger: logger) { connection in
                    if try await refused(on: connection) { return Recorded(refusedAsRetracted: true) }
                    // One row back per new delivery: at most a batch.
                    let rows = try await connection.query(
                        insert(
                            """
                            ON CONFLICT DO NOTHING RETURNING app_id, reference, token, sent_at, transport::text, coalesce(collapse_id, ''),
                                coalesce(thread, ''), coalesce(sender, ''), coalesce(recipient, ''), coalesce(campaign, '')
                            """),
                        logger: logger)
                    var new = NewDeliveries()
                    for try await row in rows {
                        var columns = ColumnReader(row)
                        let (appID, reference, token, sentAt, transport, collapseID) = try columns.next(
                            (Int64, String, ByteBuffer, Date, String, String).self)
                        let labels = try columns.next((String, String, String, String).self)
                        new.append(
                            appID: appID, reference: reference, token: token, sentAt: sentAt, transport: transport, collapseID: collapseID,
                            labels: [labels.0, labels.1, labels.2, labels.3])
                    }
                    return Recorded(
                        new: new.references.count,
                        lateRetractions: try await Self.retractLate(new, editing: editing, on: connection, logger: logger))
                }
            }
        }
    }

    /// One page of the devices that received any of `references` in the app,
    /// in token order after `after` and up to `through` (inclusive), each device
    /// once with all of its references. Devices whose token is dead and none
    /// of whose deliveries is newer than its death are skipped but counted.
    ///
    /// Each reference is read through the primary key from `after` on, at most
    /// `limit` rows each, and the rows are merged here: a page costs the same
    /// early or late in a reference of millions, whatever the planner knows of
    /// the table's statistics (`retract_device_page`, migration 0022).
    package func devicePage(
        appID: Int64,
        references: [ReferenceID],
        after: DeviceToken? = nil,
        through: DeviceToken? = nil,
        limit: Int = 1000
    ) async throws(StoreError) -> DevicePage {
        precondition(limit > 0, "a page holds at least one device")
        let query = devicePageQuery(appID: appID, references: references, after: after, through: through, limit: limit)
        let rows = try await perform("reading devices of \(Self.describe(references))", idempotent: true) { [self] in
            var rows: [DevicePage.Row] = []
            for try await (reference, token, isFCM, sentAt, deadSince, collapseID) in try await client.query(query, logger: logger).decode(
                (String, ByteBuffer, Bool, Date, Date?, String?).self)
            {
                rows.append((reference, DeviceToken(token), isFCM ? .fcm : .apns, sentAt, deadSince, collapseID))
            }
            return rows
        }
        return DevicePage(merging: rows, limit: limit)
    }

    /// The statement of ``devicePage(appID:references:after:through:limit:)``:
    /// `retract_device_page` (migration 0022), which reads each reference's
    /// primary key in token order whatever the planner estimates.
    package func devicePageQuery(
        appID: Int64, references: [ReferenceID], after: DeviceToken? = nil, through: DeviceToken? = nil, limit: Int
    ) -> PostgresQuery {
        let refs = Array(Set(references.map(\.rawValue))).sorted()
        // Bounds as values rather than NULL tests: the empty string sorts before
        // every token, and 0xFF repeated one byte longer than the longest token
        // sorts after every token the ledger accepts.
        let lower = ByteBuffer(bytes: after?.bytes ?? [])
        let upper = ByteBuffer(bytes: through?.bytes ?? Self.pastEveryToken)
        return """
            SELECT reference, token, is_fcm, sent_at, dead_since, collapse_id
            FROM retract_device_page(\(appID), \(refs)::text[], \(lower), \(upper), \(limit))
            """
    }

    /// Every device of `references`, page by page; memory holds one page.
    package func devices(
        appID: Int64,
        references: [ReferenceID],
        after: DeviceToken? = nil,
        through: DeviceToken? = nil,
        pageSize: Int = 1000
    ) -> DeviceStream {
        DeviceStream(store: self, appID: appID, references: references, after: after, through: through, pageSize: pageSize)
    }

    /// Those of `references` with at least one recorded delivery for the app.
    package func recordedReferences(appID: Int64, among references: [ReferenceID]) async throws(StoreError) -> Set<ReferenceID> {
        let refs = Array(Set(references.map(\.rawValue)))
        return try await perform("looking up \(Self.describe(references))", idempotent: true) { [self] in
            let found = try await client.query(
                """
                SELECT r.ref FROM unnest(\(refs)::text[]) AS r (ref)
                WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.app_id = \(appID) AND d.reference = r.ref)
                """,
                logger: logger
            ).values(of: String.self)
            return Set(found.map { ReferenceID($0) })
        }
    }

    /// Whether some delivery the target takes was recorded with a collapse
    /// id: what a `replace` retraction can replace.
    package func hasCollapseIDs(appID: Int64, _ target: RetractionTarget) async throws(StoreError) -> Bool {
        let taken = TakenDeliveries(target: target, appID: appID, oldestKept: retention.oldestKept())
        var binds = PostgresBindings()
        let sql = "SELECT EXISTS (SELECT 1 FROM deliveries d WHERE \(taken.condition("d", binds: &binds)) AND d.collapse_id IS NOT NULL)"
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        return try await perform("looking up collapse ids of \(taken.description)", idempotent: true) { [self] in
            try await client.query(query, logger: logger).values(of: Bool.self).first ?? false
        }
    }

    /// Of each device's references with a collapse id, those a newer
    /// delivery to the same device under the same collapse id has replaced
    /// on its screen: a delivery of a reference not in `retracted`, sent
    /// after the device's latest delivery of the reference. A retraction
    /// alert under that collapse id would hide the newer notification.
    ///
    /// One statement for the whole list. Each pair is read through the
    /// primary key (the retracted delivery) and `deliveries_by_device` (the
    /// newer ones, from the retracted one's day on); the `LIMIT` keeps the
    /// planner from hashing the whole table instead. About 30 ms for 1,000
    /// devices of 21 deliveries each over 21 days of partitions. JIT is off
    /// for it: the planner, counting every partition for every pair, would
    /// otherwise compile it for twice as long as it runs. Devices without
    /// collapse ids cost nothing.
    package func supersededReferences(
        appID: Int64, devices: [DeviceReferences], retracted: [ReferenceID]
    ) async throws(StoreError) -> [DeviceToken: Set<ReferenceID>] {
        var tokens: [ByteBuffer] = []
        var references: [String] = []
        var collapseIDs: [String] = []
        for device in devices {
            for reference in device.references {
                guard let collapseID = device.collapseIDs[reference] else { continue }
                tokens.append(ByteBuffer(bytes: device.token.bytes))
                references.append(reference.rawValue)
                collapseIDs.append(collapseID)
            }
        }
        guard !tokens.isEmpty else { return [:] }
        let retractedRefs = Array(Set(retracted.map(\.rawValue)))
        let query: PostgresQuery = """
            SELECT x.token, x.ref
            FROM unnest(\(tokens)::bytea[], \(references)::text[], \(collapseIDs)::text[]) AS x (token, ref, collapse_id)
            CROSS JOIN LATERAL (
                SELECT max(d.sent_on) AS sent_on, max(d.sent_at) AS sent_at FROM deliveries d
                WHERE d.app_id = \(appID) AND d.reference = x.ref AND d.token = x.token
            ) retracted
            CROSS JOIN LATERAL (
                SELECT 1 FROM deliveries n
                WHERE n.app_id = \(appID) AND n.token = x.token AND n.sent_on >= retracted.sent_on AND n.sent_at > retracted.sent_at
                  AND n.collapse_id = x.collapse_id AND n.reference <> ALL(\(retractedRefs)::text[])
                LIMIT 1
            ) newer
            """
        return try await perform("looking for newer notifications under the collapse ids of \(Self.describe(retracted))", idempotent: true)
        {
            [self] in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SET LOCAL jit = off", logger: logger)
                var found: [DeviceToken: Set<ReferenceID>] = [:]
                for try await (token, reference) in try await connection.query(query, logger: logger).decode((ByteBuffer, String).self) {
                    found[DeviceToken(token), default: []].insert(ReferenceID(reference))
                }
                return found
            }
        }
    }

    /// How many devices received any of `references`, the known-dead included.
    package func countDevices(appID: Int64, references: [ReferenceID]) async throws(StoreError) -> Int {
        try await perform("counting devices of \(Self.describe(references))", idempotent: true) { [self] in
            let refs = references.map(\.rawValue)
            return try await client.query("SELECT retract_device_count(\(appID), \(refs)::text[])", logger: logger).values(of: Int.self)
                .first ?? 0
        }
    }

    // MARK: - Checks before writing

    private func validate(_ deliveries: [Delivery], now: Date) throws(StoreError) {
        let oldest = retention.oldestKept(now: now)
        let newest = now.addingTimeInterval(Retention.furthestAhead)
        for (index, delivery) in deliveries.enumerated() {
            let field = "deliveries[\(index)]"
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
            if let collapseID = delivery.collapseID, let problem = Delivery.problem(withCollapseID: collapseID) {
                throw StoreError(.invalidInput, "\(field).collapseId: \(problem)")
            }
            // A reference of an account: the reference as a reference, the account as an account (LedgerScope).
            let (account, reference) = LedgerScope.split(delivery.reference)
            do {
                _ = try ReferenceID(validating: reference.rawValue, field: "reference")
            } catch {
                throw StoreError(.invalidInput, "\(field).\(error)")
            }
            if let account, let problem = AccountName.problem(with: account) {
                throw StoreError(.invalidInput, "\(field).account: \(problem)")
            }
            if let (name, problem) = delivery.labels.ledgerProblem {
                throw StoreError(.invalidInput, "\(field).\(name): \(problem)")
            }
        }
    }

    /// Apps are never deleted, so an app seen once is not asked about again.
    private func checkAppsExist(_ ids: Set<Int64>) async throws(StoreError) {
        let unknown = Array(knownApps.withLockedValue { ids.subtracting($0) })
        guard !unknown.isEmpty else { return }
        let found = try await perform("checking apps", idempotent: true) { [self] in
            try await client.query("SELECT id FROM apps WHERE id = ANY(\(unknown)::bigint[])", logger: logger).values(of: Int64.self)
        }
        knownApps.withLockedValue { $0.formUnion(found) }
        if let missing = Set(unknown).subtracting(found).sorted().first {
            throw StoreError(.notFound, "app \(missing) does not exist")
        }
    }

    static func describe(_ references: [ReferenceID]) -> String {
        let shown = references.prefix(3).map { "\"\(LedgerScope.shown($0.rawValue))\"" }.joined(separator: ", ")
        return references.count > 3 ? "\(shown) and \(references.count - 3) more" : shown
    }
}

/// The devices of some references, one ``DevicePage`` at a time.
package struct DeviceStream: AsyncSequence, Sendable {
    package typealias Element = DevicePage

    let store: RetractStore
    let appID: Int64
    let references: [ReferenceID]
    let after: DeviceToken?
    let through: DeviceToken?
    let pageSize: Int

    package struct AsyncIterator: AsyncIteratorProtocol {
        let stream: DeviceStream
        var cursor: DeviceToken?
        var finished = false

        package mutating func next() async throws(StoreError) -> DevicePage? {
            guard !finished else { return nil }
            let page = try await stream.store.devicePage(
                appID: stream.appID, references: stream.references, after: cursor, through: stream.through, limit: stream.pageSize)
            cursor = page.last
            finished = !page.mayHaveMore
            return page.last == nil ? nil : page
        }
    }

    package func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: self, cursor: after)
    }
}
