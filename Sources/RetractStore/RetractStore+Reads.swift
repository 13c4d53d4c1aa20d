import Foundation
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

/// A read as the ledger takes it: a recipient read a conversation up to a
/// point, on `reader` (left out). Recipient, thread and reference are the
/// ledger's keys (``LedgerScope``), within the read's account.
package struct ReadRecord: Sendable {
    package var id: UUID
    package var appID: Int64
    package var recipient: String
    package var thread: String
    package var point: ReadPoint
    package var reader: DeviceToken?
    package var badge: Int?

    package init(id: UUID = UUID(), appID: Int64, recipient: String, thread: String, point: ReadPoint, reader: DeviceToken?, badge: Int?) {
        self.id = id
        self.appID = appID
        self.recipient = recipient
        self.thread = thread
        self.point = point
        self.reader = reader
        self.badge = badge
    }
}

/// Where a read stops: every message of the conversation sent at or before
/// a time, or up to and including one message (those sent before it, and it).
package enum ReadPoint: Hashable, Sendable {
    case time(Date)
    case reference(String)
}

/// What a read took.
package struct ReadTaken: Hashable, Sendable {
    /// The devices told to remove something.
    package var devices: Int
    /// Their deliveries taken: rows the read wrote to the device feed.
    package var deliveries: Int
    /// The point as a time: for a reference, when it was sent; nil when no
    /// delivery of that reference is recorded.
    package var upTo: Date?
}

/// One device's owed read push, as the courier claims it: the marks of
/// one account's conversations on the device, which one push carries.
package struct ClaimedReadPush: Sendable {
    package struct Mark: Hashable, Sendable {
        package var thread: String
        package var generation: Int64
    }

    package var appID: Int64
    package var token: DeviceToken
    package var transport: PushService
    /// The account as the app names it; nil for the app's only one.
    package var account: String?
    package var marks: [Mark]
    /// What the claimed marks carry, newest first, each once, as the app names it.
    package var references: [ReferenceID]
    /// The device's other recent reads of the account, newest first, to ride along.
    package var history: [ReferenceID]
    /// The badge of the newest read claimed.
    package var badge: Int?
    /// The most attempts of its marks, this one included.
    package var attempts: Int
}

/// What became of a claimed read push.
package enum ReadPushResult: Sendable {
    /// Sent, dropped (the token is dead) or given up: nothing more is owed
    /// for the reads claimed; a newer read since is still owed.
    case done
    /// Tried again after `delay`.
    case retry(after: Duration)
}

extension RetractStore {
    /// The most references a mark keeps for later pushes to carry.
    static let readMarkReferences = 200

    /// Takes a read (docs/reads.md): the deliveries of the conversation to
    /// the recipient's devices, other than the reader, sent up to the point
    /// and after what each device was told before, that a device not dead
    /// received; lists them in each device's feed under the read's id;
    /// folds them into each device's mark for the conversation (owed a push,
    /// superseding one not sent yet); and notifies the feed's listeners of
    /// the devices and the read courier.
    ///
    /// Reads come 10 to 50 times as often as deletions, so they are taken
    /// together (``StatementBatches``): a read that finds one of
    /// ``readStatements`` free runs at once, alone; those that come while
    /// they all run are taken by the next, up to 128 in one statement
    /// (``ReadsStatement``), on ``readMarksClient``.
    package func recordRead(_ read: ReadRecord) async throws(StoreError) -> ReadTaken {
        try await readWrites.answer(read) { reads in await recordReads(reads) }
    }

    /// The reads `reads`, in one statement and transaction; one answer
    /// each, the same failure for all when the statement fails.
    func recordReads(_ reads: [ReadRecord]) async -> [Result<ReadTaken, StoreError>] {
        let operation = reads.count == 1 ? "recording a read" : "recording \(reads.count) reads"
        do throws(StoreError) {
            let statement = ReadsStatement(reads: reads)
            let taken = try await perform(operation, idempotent: true) { [self] in
                var taken = Array(repeating: ReadTaken(devices: 0, deliveries: 0, upTo: nil), count: reads.count)
                try await readMarksClient.withConnection { connection in
                    try await planEachBatch(on: connection)
                    for try await (n, devices, deliveries, at) in try await connection.execute(statement, logger: logger)
                    where taken.indices.contains(n - 1) {
                        taken[n - 1] = ReadTaken(devices: devices, deliveries: deliveries, upTo: at)
                    }
                }
                return taken
            }
            return taken.map { .success($0) }
        } catch {
            return Array(repeating: .failure(error), count: reads.count)
        }
    }

    /// Has the connection plan each statement for its values, once per
    /// connection of ``readMarksClient`` (a session setting, which
    /// PgBouncer's session mode keeps; as a startup parameter it refuses it).
    private func planEachBatch(on connection: PostgresConnection) async throws {
        guard !readMarksPlanned.withLockedValue({ $0.contains(connection.id) }) else { return }
        try await connection.query("SET plan_cache_mode = force_custom_plan", logger: logger)
        readMarksPlanned.withLockedValue { _ = $0.insert(connection.id) }
    }

    /// The channel a read notifies when it owes pushes (``recordRead(_:)``).
    static let readsChannel = "retract_reads"

    /// Listens for reads owing pushes, calling `wake` once it listens and
    /// for each. Holds one pooled connection until the task is cancelled.
    package func listenForReads(_ wake: @escaping @Sendable () -> Void) async throws(StoreError) {
        try await listen(on: Self.readsChannel, during: "listening for reads", listening: wake) { _ in wake() }
    }

    /// Claims up to `limit` marks owing a push (`FOR UPDATE SKIP LOCKED`,
    /// held for `lease`), as one push per device and account, each with the
    /// device's other reads of the account since `since` to ride along.
    package func claimReadPushes(limit: Int, lease: Duration, historySince since: Date) async throws(StoreError) -> [ClaimedReadPush] {
        try await perform("claiming read pushes", idempotent: false) { [self] in
            let leaseSeconds = Double(lease.components.seconds)
            let rows = try await client.query(
                """
                WITH claimed AS (
                    UPDATE read_marks m SET claimed_until = now() + \(leaseSeconds) * interval '1 second', attempts = m.attempts + 1
                    WHERE m.ctid = ANY (ARRAY(
                        -- By row address: a join on the key was planned as a scan of the whole table.
                        SELECT ctid FROM read_marks
                        WHERE pending AND due_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
                        ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                    ))
                    RETURNING m.app_id, m.token, m.thread, m.transport::text AS transport, m.refs, m.badge, m.generation, m.attempts,
                              m.updated_at
                )
                SELECT c.app_id, c.token, c.thread, c.transport, c.refs, c.badge, c.generation, c.attempts, c.updated_at,
                       coalesce((SELECT array_agg(u.reference ORDER BY o.updated_at DESC, u.n)
                                 FROM read_marks o CROSS JOIN LATERAL unnest(o.refs) WITH ORDINALITY AS u (reference, n)
                                 WHERE o.app_id = c.app_id AND o.token = c.token AND o.thread <> c.thread
                                   AND o.updated_at >= \(since)), '{}')
                FROM claimed c
                ORDER BY c.app_id, c.token, c.updated_at DESC
                """, logger: logger)
            var pushes: [ClaimedReadPush] = []
            var index: [ReadPushKey: Int] = [:]
            for try await (app, token, thread, transport, refs, badge, generation, attempts, _, history) in rows.decode(
                (Int64, ByteBuffer, String, String, [String], Int?, Int64, Int, Date, [String]).self)
            {
                let account = LedgerScope.split(thread).account
                let key = ReadPushKey(appID: app, token: Array(token.readableBytesView), account: account)
                let mark = ClaimedReadPush.Mark(thread: thread, generation: generation)
                let plain = { (keys: [String]) in
                    keys.compactMap { key -> ReferenceID? in
                        let (owner, value) = LedgerScope.split(key)
                        return owner == account ? ReferenceID(value) : nil
                    }
                }
                if let at = index[key] {
                    // Newest first: this mark is older than the one the push was started with.
                    pushes[at].marks.append(mark)
                    pushes[at].references += plain(refs)
                    pushes[at].history += plain(history)
                    pushes[at].attempts = max(pushes[at].attempts, attempts)
                } else {
                    index[key] = pushes.count
                    pushes.append(
                        ClaimedReadPush(
                            appID: app, token: DeviceToken(token), transport: PushService(rawValue: transport) ?? .apns, account: account,
                            marks: [mark], references: plain(refs), history: plain(history), badge: badge, attempts: attempts))
                }
            }
            return pushes.map { push in
                var push = push
                var seen = Set<ReferenceID>()
                push.references = push.references.filter { seen.insert($0).inserted }
                push.history = push.history.filter { seen.insert($0).inserted }
                return push
            }
        }
    }

    private struct ReadPushKey: Hashable {
        var appID: Int64
        var token: [UInt8]
        var account: String?
    }

    /// Records what became of claimed pushes, in one statement: a mark
    /// whose read is done owes nothing more unless a newer read came since
    /// (its generation moved on); one to retry is due again after its delay.
    package func finishReadPushes(_ finished: [(push: ClaimedReadPush, result: ReadPushResult)]) async throws(StoreError) {
        var apps: [Int64] = []
        var tokens: [ByteBuffer] = []
        var threads: [String] = []
        var generations: [Int64] = []
        var done: [Bool] = []
        var delays: [Double] = []
        for (push, result) in finished {
            for mark in push.marks {
                apps.append(push.appID)
                tokens.append(ByteBuffer(bytes: push.token.bytes))
                threads.append(mark.thread)
                generations.append(mark.generation)
                switch result {
                case .done:
                    done.append(true)
                    delays.append(0)
                case .retry(let delay):
                    done.append(false)
                    delays.append(Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                }
            }
        }
        guard !apps.isEmpty else { return }
        let columns = (apps, tokens, threads, generations, done, delays)
        try await perform("finishing \(apps.count) read pushes", idempotent: true) { [self] in
            try await client.query(
                """
                UPDATE read_marks m
                SET pending = m.pending AND NOT (u.done AND m.generation = u.generation),
                    attempts = CASE WHEN u.done AND m.generation = u.generation THEN 0 ELSE m.attempts END,
                    due_at = CASE WHEN u.done THEN m.due_at ELSE now() + u.delay * interval '1 second' END,
                    claimed_until = NULL
                FROM unnest(\(columns.0)::int8[], \(columns.1)::bytea[], \(columns.2)::text[], \(columns.3)::int8[], \(columns.4)::bool[],
                            \(columns.5)::float8[]) AS u (app_id, token, thread, generation, done, delay)
                WHERE m.app_id = u.app_id AND m.token = u.token AND m.thread = u.thread
                """, logger: logger)
        }
    }

    /// Deletes the marks untouched since before `before`: their deliveries
    /// are gone with retention.
    @discardableResult
    package func deleteReadMarks(before: Date) async throws(StoreError) -> Int {
        try await perform("deleting old read marks", idempotent: true) { [self] in
            let rows = try await client.query(
                "WITH gone AS (DELETE FROM read_marks WHERE updated_at < \(before) RETURNING 1) SELECT count(*) FROM gone", logger: logger)
            var count = 0
            for try await deleted in rows.decode(Int.self) { count = deleted }
            return count
        }
    }
}

/// Reads taken together (``RetractStore/recordRead(_:)``), in one statement.
///
/// Each read takes its own range of its recipient's deliveries of the
/// conversation (`deliveries_by_reader`); a delivery two reads of the batch
/// take is listed in the feed once, under the newer read; each device's mark
/// of a conversation is written once, with the newest read's badge, in key
/// order (so that two batches lock the marks they share in the same order).
/// One row per read: its place in the batch, its devices and deliveries
/// taken, and its point as a time.
///
/// Prepared once per connection, and planned for each batch with the
/// batch's values (``RetractStore/recordReads(_:)`` sets `plan_cache_mode`
/// on each connection of its pool): a plan kept (PostgreSQL's generic plan)
/// is made for the tables' sizes then, and one made while `read_marks` or
/// `deliveries` were nearly empty probed them by part of their keys
/// (`app_id` alone) for every delivery.
struct ReadsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH r AS (
            SELECT * FROM unnest($1::int8[], $2::uuid[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::bytea[], $8::int4[])
                WITH ORDINALITY AS r (app_id, id, recipient, thread, up_to, reference, reader, badge, n)
        ),
        point AS (
            SELECT r.n, r.app_id, r.recipient, r.thread, r.reference, r.reader,
                   CASE WHEN r.reference = '' THEN r.up_to
                        ELSE (SELECT max(d.sent_at) FROM deliveries d WHERE d.app_id = r.app_id AND d.reference = r.reference) END AS at
            FROM r
        ),
        taken AS MATERIALIZED (
            SELECT p.n, p.app_id, p.thread, d.token, d.transport, d.reference, d.sent_on, d.sent_at
            FROM point p
            JOIN deliveries d ON d.app_id = p.app_id AND d.recipient = p.recipient AND d.thread = p.thread AND d.sent_at <= p.at
            LEFT JOIN read_marks m ON m.app_id = p.app_id AND m.token = d.token AND m.thread = p.thread
            WHERE d.recipient IS NOT NULL AND d.thread IS NOT NULL
              AND d.sent_at > coalesce(m.read_up_to, '-infinity')
              AND (d.sent_at < p.at OR p.reference = '' OR d.reference = p.reference)
              AND d.token <> p.reader
              AND NOT EXISTS (SELECT FROM dead_tokens dt WHERE dt.app_id = p.app_id AND dt.token = d.token AND dt.recorded_at >= d.sent_at)
        ),
        once AS MATERIALIZED (
            SELECT DISTINCT ON (t.app_id, t.token, t.reference) t.*, r.id, nullif(r.badge, -1) AS badge
            FROM taken t JOIN r ON r.n = t.n
            ORDER BY t.app_id, t.token, t.reference, t.n DESC
        ),
        fed AS (
            INSERT INTO device_feed (app_id, token, retraction_xid, retraction_id, reference, sent_on, retracted_at)
            SELECT o.app_id, o.token, pg_current_xact_id(), o.id, o.reference, o.sent_on, now() FROM once o
            ON CONFLICT DO NOTHING
        ),
        marked AS (
            INSERT INTO read_marks AS m (app_id, token, thread, transport, read_up_to, refs, badge, fed_xid)
            SELECT o.app_id, o.token, o.thread, max(o.transport), max(o.sent_at),
                   (array_agg(o.reference ORDER BY o.sent_at DESC, o.reference))[1:\(RetractStore.readMarkReferences)],
                   (array_agg(o.badge ORDER BY o.n DESC))[1], pg_current_xact_id()
            FROM once o
            GROUP BY o.app_id, o.token, o.thread
            ORDER BY o.app_id, o.token, o.thread
            ON CONFLICT (app_id, token, thread) DO UPDATE
            SET read_up_to = greatest(m.read_up_to, excluded.read_up_to),
                refs = (excluded.refs || m.refs)[1:\(RetractStore.readMarkReferences)],
                badge = excluded.badge, pending = true, generation = m.generation + 1,
                attempts = CASE WHEN m.pending THEN m.attempts ELSE 0 END,
                due_at = CASE WHEN m.pending THEN m.due_at ELSE now() END,
                fed_xid = excluded.fed_xid, updated_at = now()
            RETURNING m.app_id, m.token
        ),
        notified AS (
            SELECT pg_notify('retract_feed', k.app_id::text || ' ' || pg_current_xact_id()::text || ' '
                             || CASE WHEN count(*) > 400 THEN '*'
                                     ELSE string_agg(encode(substr(sha256(k.token), 1, 8), 'hex'), ',') END)
            FROM marked k GROUP BY k.app_id
        ),
        woken AS (
            SELECT pg_notify('\(RetractStore.readsChannel)', '') FROM marked HAVING count(*) > 0
        )
        SELECT p.n, count(DISTINCT t.token), count(t.token), p.at, (SELECT count(*) FROM notified) + (SELECT count(*) FROM woken)
        FROM point p LEFT JOIN taken t ON t.n = p.n
        GROUP BY p.n, p.at
        ORDER BY p.n
        """
    typealias Row = (Int, Int, Int, Date?)
    /// Named once: PostgresNIO's default name is the type's reflected name, made again for every call.
    static let name = "retract_record_reads"

    var reads: [ReadRecord]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(reads.map(\.appID))
        bindings.append(reads.map(\.id))
        bindings.append(reads.map(\.recipient))
        bindings.append(reads.map(\.thread))
        // No array of PostgresNIO's takes NULLs: what a read leaves out is
        // passed as what no read gives (an empty reference or token, badge -1).
        bindings.append(reads.map { read in if case .time(let time) = read.point { time } else { Date.distantPast } })
        bindings.append(reads.map { read in if case .reference(let reference) = read.point { reference } else { "" } })
        bindings.append(reads.map { ByteBuffer(bytes: $0.reader?.bytes ?? []) })
        bindings.append(reads.map { Int32(clamping: $0.badge ?? -1) })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (n, devices, deliveries, at, _) = try row.decode((Int, Int, Int, Date?, Int).self)
        return (n, devices, deliveries, at)
    }
}

