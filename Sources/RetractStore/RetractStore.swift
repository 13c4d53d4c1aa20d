import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import RetractModel

/// The ledger in PostgreSQL: who received which notification, dead tokens,
/// retractions and their work queue, API keys and the audit log.
///
/// Every operation is one or a few parameterised statements on a pooled
/// connection; errors come out as ``StoreError``. Operations that can run
/// twice without harm (reads, idempotent writes) are tried again when the
/// connection drops; the others report ``StoreError/Code/connectionLost``.
package final class RetractStore: Sendable {
    package let client: PostgresClient
    /// The pool of the reads an API key with only `read` can start (the
    /// notification list, the audit log), kept apart so that they can never
    /// take the connections recording, retracting and the workers need; its
    /// statements stop at a timeout. ``client`` when no ``ReadPool`` was given.
    package let readClient: PostgresClient
    /// The pool of the device feed's reads, which every phone of every app
    /// starts with a public key: kept apart as ``readClient`` is, so that
    /// however many phones read, recording, retracting and the workers keep
    /// their connections; its statements stop at a timeout. ``readClient``
    /// when no pool was given for it.
    package let feedClient: PostgresClient
    /// One connection of its own for the server's ping and the device
    /// feed's ticks, so that a pool busy with slow queries does not look
    /// like a database that is down, nor hold up the ticks
    /// (``client`` only in a store made with ``init(client:readClient:feedClient:healthClient:controlClient:retention:logger:)``
    /// and no client for it).
    package let healthClient: PostgresClient
    /// Two connections of their own for a person stopping a retraction
    /// (``cancelRetraction(id:by:reason:apps:)``): the workers sending it can
    /// hold every connection of ``client`` while they wait for its row, and
    /// a cancel must not wait behind them for a connection as well
    /// (``client`` when none was given).
    package let controlClient: PostgresClient
    /// The pool reads of conversations are taken on (``recordRead(_:)``):
    /// ``readStatements`` connections of their own, so that a read does not
    /// wait behind the workers for a connection (``client`` when none was
    /// given, whose connections are then set as ``readMarksPlanned`` says).
    let readMarksClient: PostgresClient
    /// The connections of ``readMarksClient`` set to plan each statement for its values.
    let readMarksPlanned = NIOLockedValueBox<Set<PostgresConnection.ID>>([])
    /// Whether ``readClient`` and ``feedClient`` reach a read replica (a hot
    /// standby, `--read-database-url`): what they read may lag the ledger.
    package let readsFromReplica: Bool
    /// How long deliveries are kept; older day partitions are dropped.
    package let retention: Retention
    let logger: Logger
    /// Day partitions of `deliveries` known to exist, so a write does not ask each time.
    let knownPartitions = NIOLockedValueBox<Set<String>>([])
    /// Apps known to exist.
    let knownApps = NIOLockedValueBox<Set<Int64>>([])
    /// Apps read by name, so that every API request need not read its app
    /// again: each for ``appCacheLifetime``. An app changed through this
    /// store is forgotten at once; changed through another process, it is
    /// seen here within that time.
    let appsByName = NIOLockedValueBox<[String: (app: App, readAt: ContinuousClock.Instant)]>([:])
    /// How long an app read by name is used before it is read again.
    package static let appCacheLifetime: Duration = .seconds(5)
    /// The device feed's page reads, read together while the feed's pool is busy.
    let feedReads: StatementBatches<FeedPageAsk, DeviceFeedPage, StoreError>
    /// Reads of conversations, taken together while ``readStatements`` statements run.
    let readWrites = StatementBatches<ReadRecord, ReadTaken, StoreError>(concurrency: readStatements, maximumBatch: 128)
    /// How many statements take reads at once: few, so that under load each
    /// takes many (its plan costs about as much as the reads in it).
    static let readStatements = 2
    /// When a statement last had its answer, on any pool.
    private let answeredAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
    /// When a statement last failed because its connection was lost, on any pool.
    private let lostAt = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    /// When a statement last had its answer from the database, on any pool:
    /// a ping stuck behind a busy process is not a database that is down
    /// while the workers' statements are answered.
    package var lastAnswer: ContinuousClock.Instant? { answeredAt.withLockedValue { $0 } }

    /// A store over `client`, which the caller runs (`client.run()`), as a
    /// service of the server's lifecycle, say. `feedStatements`: how many
    /// statements read device feed pages at once (``StatementBatches``).
    package init(
        client: PostgresClient, readClient: PostgresClient? = nil, feedClient: PostgresClient? = nil, healthClient: PostgresClient? = nil,
        controlClient: PostgresClient? = nil, readMarksClient: PostgresClient? = nil, readsFromReplica: Bool = false, retention: Retention = Retention(),
        feedStatements: Int = ReadPool().connections / 2, logger: Logger = Logger(label: "retract.store")
    ) {
        self.client = client
        self.readsFromReplica = readsFromReplica && readClient != nil
        self.readClient = readClient ?? client
        self.feedClient = feedClient ?? readClient ?? client
        self.healthClient = healthClient ?? client
        self.controlClient = controlClient ?? client
        self.readMarksClient = readMarksClient ?? client
        self.retention = retention
        self.feedReads = StatementBatches(concurrency: feedStatements)
        self.logger = logger
    }

    /// Runs `body` with a store connected to `url`, and closes the connections
    /// when it returns. Connects once first, so an unreachable database is
    /// reported within seconds (see ``checkReachable(_:logger:)``).
    ///
    /// With a `readURL` (a streaming replica of `url`), the read and feed
    /// pools connect there: the device feed, the notification and audit
    /// lists, and a retraction's status read from it (``readsFromReplica``).
    package static func withStore<Result: Sendable>(
        url: DatabaseURL,
        readURL: DatabaseURL? = nil,
        retention: Retention = Retention(),
        maximumConnections: Int = 20,
        readPool: ReadPool? = nil,
        feedPool: ReadPool? = nil,
        logger: Logger = Logger(label: "retract.store"),
        _ body: (RetractStore) async throws -> Result
    ) async throws -> Result {
        try await checkReachable(url, logger: logger)
        if let readURL { try await checkReachable(readURL, logger: logger) }
        // The pool's own messages are debug chatter but for one warning, logged
        // when a query comes before run() has started; that race is harmless
        // here (the lease waits for run), so the pool logs errors only.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .error)
        func pool(_ connections: Int, open: Int = 0, startup: [(String, String)] = [], on url: DatabaseURL = url) throws -> PostgresClient {
            var configuration = try url.clientConfiguration()
            configuration.options.maximumConnections = connections
            configuration.options.minimumConnections = open
            configuration.options.additionalStartupParameters = startup
            return PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        }
        let client = try pool(maximumConnections)
        func timed(_ readPool: ReadPool) throws -> PostgresClient {
            let milliseconds = Int((readPool.statementTimeout / .milliseconds(1)).rounded(.up))
            return try pool(readPool.connections, startup: [("statement_timeout", "\(milliseconds)")], on: readURL ?? url)
        }
        // A replica's reads need pools of their own, given or not.
        let reads = try (readPool ?? readURL.map { _ in ReadPool() }).map(timed)
        let feedPool = feedPool ?? readURL.map { _ in ReadPool() }
        let feed = try feedPool.map(timed)
        // The feed's page reads take half its connections (at least one): the fewer statements at once, the more pages
        // each reads (``StatementBatches``); the rest read its other questions (an app's newest place).
        let feedConnections = (feedPool ?? readPool)?.connections ?? maximumConnections
        // The ping's own connection, opened on the first ping: a pool kept
        // busy by workers must not read as a database that is down.
        let health = try pool(1)
        let control = try pool(2, open: 1)
        let readMarks = try pool(readStatements)
        let clients = [client, health, control, readMarks] + [reads, feed].compactMap { $0 }
        let store = RetractStore(
            client: client, readClient: reads, feedClient: feed, healthClient: health, controlClient: control, readMarksClient: readMarks,
            readsFromReplica: readURL != nil, retention: retention, feedStatements: max(1, feedConnections / 2), logger: logger)
        let running = Task {
            await withDiscardingTaskGroup { group in
                for client in clients { group.addTask { await client.run() } }
            }
        }
        do {
            let result = try await body(store)
            await stop(running, logger: logger)
            return result
        } catch {
            await stop(running, logger: logger)
            throw error
        }
    }

    /// Cancels the pool's `run()` and waits for it, but not forever: once, in
    /// a long test run, a pool whose connections the server had cut never
    /// returned from `run()` and the process hung idle. The pool is left to
    /// finish on its own then; its connections are gone anyway.
    private static func stop(_ running: Task<Void, Never>, logger: Logger) async {
        running.cancel()
        let returned = await firstOf(
            {
                await running.value; return true
            },
            {
                try? await Task.sleep(for: .seconds(10)); return false
            })
        if !returned { logger.warning("the database pool did not shut down within 10 s; leaving it") }
    }

    /// Opens and closes one connection to `url`. A pool keeps trying an
    /// unreachable database for a minute before it fails a request; a command
    /// at a terminal should say at once that the database is not there.
    package static func checkReachable(_ url: DatabaseURL, logger: Logger) async throws(StoreError) {
        do {
            let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 0, logger: logger)
            try await connection.close()
        } catch {
            let mapped = StoreError.from(error, during: "connecting to \(url)")
            // PostgreSQL answered (a wrong password, no such database): its message says it.
            if mapped.sqlState != nil { throw mapped }
            let reason = (error as? PSQLError)?.underlying.map { "\($0)" } ?? "\(error)"
            throw StoreError(.connectionLost, "cannot connect to the database at \(url): \(reason)")
        }
    }

    /// Runs `body`, mapping errors to ``StoreError``. An `idempotent` body is
    /// run again, up to twice, when the connection was lost; any body, when
    /// PostgreSQL rolled it back to break a deadlock (``StoreError/Code/conflict``):
    /// nothing of it was written. Two transactions that lock a retraction and
    /// its work items in opposite orders (a stop dropping a retraction's work
    /// while another lane splits one of its pages) can deadlock.
    ///
    /// A body that has not answered within `answerLimit` counts as a lost
    /// connection, and is left to end on its own: when PostgreSQL is
    /// restarted in the middle of a statement, PostgresNIO (1.33) can leave
    /// that statement waiting forever, and the worker holding it with it.
    @discardableResult
    func perform<Result: Sendable>(
        _ operation: String,
        idempotent: Bool,
        answerLimit: Duration? = RetractStore.answerLimit,
        abandonWhen: AbandonWhen? = nil,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws(StoreError) -> Result {
        var attempt = 1
        while true {
            do {
                let result = try await Self.answering(
                    within: answerLimit, lostSince: { [lostAt] in lostAt.withLockedValue { $0 } }, abandonWhen: abandonWhen, body)
                let now = ContinuousClock.now
                answeredAt.withLockedValue { $0 = now }
                return result
            } catch {
                let storeError = StoreError.from(error, during: operation)
                if error is Abandoned { throw storeError }
                if storeError.code == .connectionLost {
                    let now = ContinuousClock.now
                    lostAt.withLockedValue { $0 = now }
                }
                let retried = storeError.code == .conflict || (idempotent && storeError.code == .connectionLost)
                // A cancelled task's statement fails as a lost connection: there is no one left to retry for.
                guard retried, attempt < 3, !Task.isCancelled else { throw storeError }
                logger.warning(
                    storeError.code == .conflict
                        ? "rolled back by the database to break a deadlock; trying again" : "database connection lost; trying again",
                    metadata: ["operation": "\(operation)", "attempt": "\(attempt)"])
                try? await Task.sleep(for: .milliseconds(100 * attempt))
                attempt += 1
            }
        }
    }

    /// ``perform(_:idempotent:answerLimit:_:)`` of a read on ``readClient``:
    /// a statement its pool's timeout stopped is ``StoreError/Code/readTimeout``.
    func performRead<Result: Sendable>(
        _ operation: String, _ body: @escaping @Sendable () async throws -> Result
    ) async throws(StoreError) -> Result {
        try await performTimed(operation, timed: readClient !== client, body)
    }

    /// A read of `body` on ``client``, or on the read replica when there is
    /// one and the caller takes what it says (`mayLag`): it may be seconds
    /// behind, and a row made since is not there yet.
    func performReplicaRead<Result: Sendable>(
        _ operation: String, mayLag: Bool, _ body: @escaping @Sendable (PostgresClient) async throws -> Result
    ) async throws(StoreError) -> Result {
        guard mayLag, readsFromReplica else {
            return try await perform(operation, idempotent: true) { [client] in try await body(client) }
        }
        return try await performRead(operation) { [readClient] in try await body(readClient) }
    }

    /// The same for a read on ``feedClient``.
    func performFeedRead<Result: Sendable>(
        _ operation: String, abandonWhen: AbandonWhen? = nil, _ body: @escaping @Sendable () async throws -> Result
    ) async throws(StoreError) -> Result {
        try await performTimed(operation, timed: feedClient !== client, abandonWhen: abandonWhen, body)
    }

    private func performTimed<Result: Sendable>(
        _ operation: String, timed: Bool, abandonWhen: AbandonWhen? = nil, _ body: @escaping @Sendable () async throws -> Result
    ) async throws(StoreError) -> Result {
        do {
            return try await perform(operation, idempotent: true, abandonWhen: abandonWhen, body)
        } catch  where error.code == .canceled && timed {
            throw StoreError(.readTimeout, "\(operation): stopped by the read timeout", sqlState: error.sqlState)
        }
    }

    /// How long a statement of the ledger may go without an answer: far
    /// longer than any of them takes (migrations have no limit).
    package static let answerLimit: Duration = .seconds(60)

    /// How long a statement may go without an answer once a connection was
    /// lost around the time it was made. While the server cuts connections
    /// (a failover, a restart, a terminated backend) the pool may lease one
    /// whose channel has just closed; PostgresNIO 1.33 writes the statement
    /// into it and its answer never comes. Seen in the test suite about once
    /// in eight runs of a test that cuts connections: a statement stalled for
    /// the whole ``answerLimit``.
    package static let answerLimitAfterLoss: Duration = .seconds(10)

    /// Says whether to give a statement up besides its limit, asked by its
    /// watchdog at every step (half a second): the API passes "the database
    /// is down" as its health check sees it, so that a read waiting on a
    /// database that went away is answered 503 without a race of its own
    /// around the call. Passed down as a parameter: a task-local holding it
    /// crashed the release build (Swift 6.3.1, `swift_task_localValuePush`).
    package typealias AbandonWhen = @Sendable () -> Bool

    /// A statement given up because its ``AbandonWhen`` said so; not tried again.
    package struct Abandoned: Error {}

    /// `body`'s result, or ``NoAnswer`` once `limit` has passed without one,
    /// or ``answerLimitAfterLoss`` after a connection was lost (`lostSince`)
    /// while it waited or within that time before it began.
    static func answering<Result: Sendable>(
        within limit: Duration?, lostSince: @escaping @Sendable () -> ContinuousClock.Instant? = { nil },
        abandonWhen abandon: AbandonWhen? = nil, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        guard let limit else { return try await body() }
        let started = ContinuousClock.now
        let outcome: Swift.Result<Result, any Error>? = await firstOf(
            {
                do {
                    return .success(try await body())
                } catch {
                    return .failure(error)
                }
            },
            {
                while !Task.isCancelled {
                    let now = ContinuousClock.now
                    if now - started >= limit { return .failure(NoAnswer(limit: limit)) }
                    if let abandon, abandon() { return .failure(Abandoned()) }
                    if let lost = lostSince(), lost >= started - answerLimitAfterLoss,
                        now - max(lost, started) >= answerLimitAfterLoss
                    {
                        return .failure(NoAnswer(limit: answerLimitAfterLoss, afterLoss: true))
                    }
                    try? await Task.sleep(for: min(.milliseconds(500), limit - (now - started)))
                }
                return nil
            })
        // Cancelled: the statement is given up as one without an answer.
        guard let outcome else { throw NoAnswer(limit: limit) }
        return try outcome.get()
    }

    /// A statement that did not answer within its limit.
    struct NoAnswer: Error {
        var limit: Duration
        /// Whether the limit was the shorter one after a lost connection.
        var afterLoss = false
    }

    /// Runs `operation`, and again every second while it fails because the
    /// database cannot be reached (PostgreSQL restarting), for at most
    /// `patience` or until the task is cancelled; then its last error. For
    /// a write that must not be lost to a short outage (a finished page, a
    /// released item, a partial send) and is safe to repeat.
    package func waitingOutLostConnections<Result>(
        for patience: Duration, _ operation: () async throws(StoreError) -> Result
    ) async throws(StoreError) -> Result {
        try await StoreError.waitingOutLostConnections(
            for: patience,
            lost: { logger.warning("database connection lost; trying again in a second", metadata: ["error": "\($0.message)"]) },
            operation)
    }

    /// Whether the database answers, why it takes no writes if it does not,
    /// and which server answers: for readiness checks. A standby
    /// (`pg_is_in_recovery()`: after a failover the old address may reach
    /// one) or a server read-only by default (`default_transaction_read_only`)
    /// answers reads and refuses every write. Through ``healthClient``, so
    /// that a busy pool does not read as a database that is down.
    @discardableResult
    package func ping() async throws(StoreError) -> DatabasePing {
        try await perform("checking the database", idempotent: true) { [self] in
            let rows = try await healthClient.query(
                """
                SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only') = 'on', pg_postmaster_start_time()
                """, logger: logger)
            for try await (standby, readOnly, started) in rows.decode((Bool, Bool, Date).self) {
                if standby {
                    return DatabasePing(
                        readOnly: "the database is a standby (in recovery): it takes no writes; point the database URL at the primary",
                        startedAt: started)
                }
                return DatabasePing(
                    readOnly: readOnly ? "the database is read-only (default_transaction_read_only = on): it takes no writes" : nil,
                    startedAt: started)
            }
            throw StoreError(.database, "checking the database: no answer row")
        }
    }

    /// A pool of reads kept apart from the rest: the reads a `read` key can
    /// start (`readPool`), or the device feed's (`feedPool`).
    package struct ReadPool: Hashable, Sendable {
        /// Its connections, beside the main pool's.
        package var connections: Int
        /// PostgreSQL's `statement_timeout` on them: a read that runs longer is stopped.
        package var statementTimeout: Duration

        package init(connections: Int = 4, statementTimeout: Duration = .seconds(10)) {
            self.connections = connections
            self.statementTimeout = statementTimeout
        }
    }
}

/// What a ping of the database found.
package struct DatabasePing: Hashable, Sendable {
    /// Why it takes no writes, in a sentence; nil when it takes them.
    package var readOnly: String?
    /// When the server answering started (`pg_postmaster_start_time()`):
    /// another time is another server, or the same one restarted. A standby
    /// promoted behind the same address is another server.
    package var startedAt: Date

    package init(readOnly: String?, startedAt: Date) {
        self.readOnly = readOnly
        self.startedAt = startedAt
    }
}

/// How long the ledger keeps deliveries.
package struct Retention: Hashable, Sendable {
    /// Days of deliveries kept, counting today.
    package var days: Int
    /// Day partitions made in advance.
    package var daysAhead: Int

    package init(days: Int = 30, daysAhead: Int = 2) {
        self.days = days
        self.daysAhead = daysAhead
    }

    /// The earliest send time a delivery recorded at `now` may have: the start
    /// of the oldest day kept. An older one would be dropped at once.
    package func oldestKept(now: Date = Date()) -> Date {
        UTCDay(containing: now).adding(days: -(days - 1)).start
    }

    /// How far ahead of `now` a send time may be.
    package static let furthestAhead: TimeInterval = 24 * 60 * 60
}

extension PostgresRowSequence {
    /// The first column of every row.
    func values<Value: PostgresDecodable>(of _: Value.Type) async throws -> [Value] {
        var values: [Value] = []
        for try await row in self { values.append(try row.makeRandomAccess()[0].decode(Value.self)) }
        return values
    }
}

extension PostgresConnection {
    /// `query(_:logger:)`, named apart from its EventLoopFuture twin so a
    /// chained `.values(of:)` or `.decode` picks the async form.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await self.query(query, logger: logger)
    }
}
