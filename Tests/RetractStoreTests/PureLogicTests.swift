import Foundation
import RetractKit
import RetractModel
import Testing

@testable import RetractStore

@Suite("SQL scripts, URLs and days")
struct PureLogicTests {
    @Test func scriptSplitsOnSemicolonsOutsideQuotesCommentsAndBodies() throws {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'it''s; fine');
            /* block; /* nested; */ still comment */ CREATE TABLE "odd;name" (y int);
            CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; END $$;
            CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $body$ SELECT 'a;b' $body$;
            SELECT E'back\\'slash;', $1;
            -- trailing comment only
            """
        let statements = try SQLScript.statements(in: script)
        #expect(statements.count == 5)
        #expect(statements[0].hasSuffix("DEFAULT 'it''s; fine')"))
        #expect(statements[1].hasSuffix("CREATE TABLE \"odd;name\" (y int)"))
        #expect(statements[2].hasSuffix("$$ BEGIN PERFORM 1; END $$"))
        #expect(statements[3].hasSuffix("$body$ SELECT 'a;b' $body$"))
        #expect(statements[4] == "SELECT E'back\\'slash;', $1")
    }

    @Test(arguments: [
        ("SELECT 'open", "string", 1),
        ("SELECT 1;\nSELECT \"open", "quoted identifier", 2),
        ("SELECT 1;\n\n/* open", "block comment", 3),
        ("CREATE FUNCTION f() AS $fn$ body", "dollar-quoted body $fn$", 1),
    ])
    func unterminatedConstructsAreReportedWithTheirLine(script: String, construct: String, line: Int) {
        #expect(throws: SQLScript.Unterminated(construct: construct, line: line)) { try SQLScript.statements(in: script) }
    }

    @Test func theShippedMigrationsSplit() throws {
        for migration in Migration.all {
            let statements = try SQLScript.statements(in: migration.sql)
            #expect(!statements.isEmpty, "\(migration.name)")
            // Split at every statement: none holds two table definitions.
            #expect(statements.allSatisfy { $0.components(separatedBy: "CREATE TABLE").count <= 2 }, "\(migration.name)")
            #expect(statements.allSatisfy { !$0.isEmpty })
        }
    }

    @Test func databaseURLsAreRead() throws {
        let url = try DatabaseURL("postgres://retract:s%40cret@db.internal:6543/ledger?sslmode=require")
        #expect(url.host == "db.internal")
        #expect(url.port == 6543)
        #expect(url.username == "retract")
        #expect(url.password == "s@cret")
        #expect(url.database == "ledger")
        #expect(url.tls == .require)
        #expect(url.description == "postgres://retract:***@db.internal:6543/ledger?sslmode=require")
        let defaults = try DatabaseURL("postgresql://localhost")
        #expect(defaults.port == 5432)
        #expect(defaults.username == "postgres")
        #expect(defaults.database == "postgres")
        #expect(defaults.tls == .prefer)
    }

    @Test(arguments: [
        ("not a url", "not a URL"),
        ("mysql://localhost/db", "the scheme is mysql"),
        ("postgres:///db", "no host"),
        ("postgres://localhost/db?sslmode=sometimes", "sslmode sometimes"),
        ("postgres://u:hunter2@localhost/db?pool=3", "unknown parameter pool"),
        // Passwords that break the URL's shape: redacted without it.
        ("postgres://u:hun/ter2@localhost/db", "not a URL"),
        ("postgres://u:hun#ter2@localhost/db", "not a URL"),
        ("postgres://u:hun?ter2@localhost/db", "not a URL"),
        ("postgres://u@localhost/db?password=hunter2&pool=3", "unknown parameter"),
        ("postgres://u:hunter2", "not a URL"),
        ("postgres://u:hunter2@localhost/db?sslrootcert=ca.pem", "sslrootcert is used by sslmode=verify-ca or verify-full only"),
    ])
    func badDatabaseURLsSayWhatIsWrongWithoutThePassword(string: String, reason: String) {
        let error = #expect(throws: StoreError.self) { try DatabaseURL(string) }
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        for piece in ["hunter2", "hun/ter2", "ter2"] { #expect(error?.message.contains(piece) == false, "\(error?.message ?? "")") }
    }

    @Test func aPortIsNotTakenForAPassword() {
        let error = #expect(throws: StoreError.self) { try DatabaseURL("postgres://db.internal:5432/ledger?pool=3") }
        #expect(error?.message.contains("postgres://db.internal:5432/ledger") == true, "\(error?.message ?? "")")
    }

    @Test func everyTLSModeOfLibpqIsRead() throws {
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            #expect(try DatabaseURL("postgres://u@db.internal/ledger?sslmode=\(mode)").tls.rawValue == mode)
        }
        let verified = try DatabaseURL("postgres://u:hunter2@db.internal/ledger?sslmode=verify-full&sslrootcert=/etc/retract/db-ca.pem")
        #expect(verified.rootCertificatePath == "/etc/retract/db-ca.pem")
        #expect(verified.description == "postgres://u:***@db.internal:5432/ledger?sslmode=verify-full&sslrootcert=/etc/retract/db-ca.pem")
    }

    @Test func daysConvertToPartitionNamesAndBack() {
        let date = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18T09:46:40Z
        let day = UTCDay(containing: date)
        #expect(day.isoDate == "2026-11-18")
        #expect(day.partitionName == "deliveries_20261118")
        #expect(UTCDay(partitionName: "deliveries_20261118") == day)
        #expect(UTCDay(containing: Date(timeIntervalSince1970: 0)).isoDate == "1970-01-01")
        #expect(UTCDay(partitionName: "deliveries_20240229")?.adding(days: 1).isoDate == "2024-03-01")
        for name in ["deliveries_2026111", "deliveries_20261332", "other_20261118", "deliveries_2026111x"] {
            #expect(UTCDay(partitionName: name) == nil, "\(name)")
        }
        for number in stride(from: -700_000, through: 2_900_000, by: 997) {
            let day = UTCDay(number: number)
            #expect(UTCDay(partitionName: day.partitionName) == day)
        }
    }
}

@Suite("Waiting for the first of two")
struct FirstOfTests {
    @Test func theQuickerOperationWinsAndTheSlowerIsNotAwaited() async {
        let clock = ContinuousClock()
        let started = clock.now
        // As when the pool's run() never returns after cancellation: the deadline wins.
        let value = await firstOf(
            {
                try? await Task.sleep(for: .seconds(3600)); return "never"
            }, { "deadline" })
        #expect(value == "deadline")
        #expect(clock.now - started < .seconds(60))
        #expect(
            await firstOf(
                { "first" },
                {
                    try? await Task.sleep(for: .seconds(3600)); return "late"
                }) == "first")
    }
}

@Suite("Merging a page")
struct DevicePageMergingTests {
    private func token(_ byte: UInt8) -> DeviceToken { DeviceToken(bytes: [byte]) }
    private let sent = Date(timeIntervalSince1970: 1_000)

    @Test func eachReferenceKeepsTheCollapseIDItsOriginalWasSentWith() {
        let died = sent.addingTimeInterval(10)
        let rows: [DevicePage.Row] = [
            ("a", token(1), .apns, sent, nil, "a"), ("b", token(1), .apns, sent, nil, nil), ("c", token(1), .apns, sent, nil, "thread-9"),
            // A delivery older than its token's death is not sent, nor is its collapse id kept.
            ("a", token(2), .apns, sent, died, "a"), ("b", token(2), .apns, died.addingTimeInterval(1), died, "b"),
        ]
        let page = DevicePage(merging: rows, limit: 10)
        #expect(page.devices.map(\.collapseIDs) == [["a": "a", "c": "thread-9"], ["b": "b"]])
    }

    @Test func eachDeviceKeepsTheServiceItsDeliveryWentThrough() {
        let rows: [DevicePage.Row] = [
            ("a", token(1), .fcm, sent, nil, nil), ("b", token(1), .fcm, sent, nil, nil), ("a", token(2), .apns, sent, nil, nil),
            ("a", token(3), .fcm, sent, nil, nil),
        ]
        let page = DevicePage(merging: rows, limit: 10)
        #expect(page.devices.map(\.transport) == [.fcm, .apns, .fcm])
        #expect(page.devices.allSatisfy { $0.collapseIDs.isEmpty })
        #expect(page.devices[0].references == ["a", "b"])
    }

    @Test func aPageEndsWhereAReferenceThatHitItsLimitMayContinue() {
        // "a" returned its limit of 4 rows, ending at 5: "b"'s rows past 5 wait for the next page.
        let rows: [DevicePage.Row] = [
            ("a", token(1), .apns, sent, nil, nil), ("a", token(3), .apns, sent, nil, nil), ("a", token(5), .apns, sent, nil, nil),
            ("a", token(5), .apns, sent, nil, nil), ("b", token(2), .apns, sent, nil, nil), ("b", token(3), .apns, sent, nil, nil),
            ("b", token(9), .apns, sent, sent.addingTimeInterval(1), nil),
        ]
        let page = DevicePage(merging: rows, limit: 4)
        #expect(page.devices.map(\.token) == [1, 2, 3, 5].map(token))
        #expect(page.devices[2].references == ["a", "b"])
        #expect(page.last == token(5))
        #expect(page.mayHaveMore)
        #expect(page.deadSkipped == 0)
    }

    @Test func aPageWhoseReferencesAllEndedEarlyIsTheLast() {
        let rows: [DevicePage.Row] = [
            ("a", token(1), .apns, sent, nil, nil), ("a", token(1), .apns, sent, nil, nil),
            ("b", token(4), .apns, sent, sent.addingTimeInterval(1), nil),
        ]
        let page = DevicePage(merging: rows, limit: 3)
        #expect(page.devices == [DeviceReferences(token: token(1), references: ["a"])])
        #expect(page.skipped == [token(4)])
        #expect(page.last == token(4))
        #expect(!page.mayHaveMore)
        #expect(DevicePage(merging: [], limit: 3) == DevicePage(devices: [], last: nil, mayHaveMore: false))
    }

    @Test func aPageOfManyReferencesHoldsAtMostLimitDevices() {
        // Three references, two rows each, interleaved: six devices, none past a cutoff.
        let rows: [DevicePage.Row] = [
            ("a", token(1), .apns, sent, nil, nil), ("a", token(4), .apns, sent, nil, nil), ("b", token(2), .apns, sent, nil, nil),
            ("b", token(5), .apns, sent, nil, nil), ("c", token(3), .apns, sent, nil, nil), ("c", token(6), .apns, sent, nil, nil),
        ]
        let page = DevicePage(merging: rows, limit: 2)
        #expect(page.devices.map(\.token) == [token(1), token(2)])
        #expect(page.last == token(2))
        #expect(page.mayHaveMore)
    }

    @Test func aDeadTokenIsSkippedOnlyForDeliveriesNoNewerThanItsDeath() {
        let died = Date(timeIntervalSince1970: 2_000)
        let rows: [DevicePage.Row] = [
            // Sent before it died, and at the moment it was found dead: skipped.
            ("a", token(1), .apns, died.addingTimeInterval(-60), died, nil), ("a", token(2), .apns, died, died, nil),
            // Registered again and sent a newer notification: it gets that one's reference only.
            ("a", token(3), .apns, died.addingTimeInterval(-60), died, nil), ("b", token(3), .apns, died.addingTimeInterval(60), died, nil),
            ("a", token(4), .apns, died, nil, nil),
        ]
        let page = DevicePage(merging: rows, limit: 10)
        #expect(
            page.devices == [DeviceReferences(token: token(3), references: ["b"]), DeviceReferences(token: token(4), references: ["a"])])
        #expect(page.skipped == [token(1), token(2)])
        #expect(page.last == token(4))
    }
}

@Suite("device feed cursor")
struct DeviceFeedCursorTests {
    @Test func aCursorReadsBackAsItWasWritten() throws {
        let cursor = DeviceFeedCursor(transaction: 981_234, id: UUID())
        #expect(DeviceFeedCursor(encoded: cursor.encoded) == cursor)
        #expect(DeviceFeedCursor(encoded: DeviceFeedCursor.start.encoded) == .start)
        #expect(!cursor.encoded.contains("="))
    }

    @Test(arguments: ["", "garbage", "djEuMS4y", "v1.1.0", String(repeating: "A", count: 200)])
    func anythingElseIsNotACursor(text: String) {
        #expect(DeviceFeedCursor(encoded: text) == nil)
    }

    @Test func aTransactionBeyondXid8sRangeIsRefused() {
        let encoded = Data("v1.\(UInt64.max).\(UUID().uuidString)".utf8).base64EncodedString()
        #expect(DeviceFeedCursor(encoded: encoded) == nil)
    }
}

/// What ``RetractStore/finishReporting(_:)`` writes, added up without a database.
@Suite("Finished work")
struct FinishedWorkTests {
    static func item(_ id: Int64, of retraction: UUID) -> ClaimedWorkItem {
        ClaimedWorkItem(
            id: id, retractionID: retraction, kind: .page(after: nil, through: nil), attempts: 1, claim: UUID(), leaseEnds: Date())
    }

    static func device(_ byte: UInt8) -> DeviceReferences {
        DeviceReferences(token: DeviceToken(bytes: [byte]), references: ["r"])
    }

    @Test func resultsAddUpPerRetractionAndDeadTokensPerApp() {
        let (one, two, orphan) = (UUID(), UUID(), UUID())
        var counts = RetractionCounts()
        counts.sent = 3
        counts.failed = 1
        let results = [
            WorkResult(
                item: Self.item(1, of: one), counts: counts,
                retries: [PushRetry(device: Self.device(1), delay: .seconds(1), attempts: 1, lastError: "503")],
                deadTokens: [DeadToken(token: DeviceToken(bytes: [9]), since: Date(), reason: "Unregistered")], failures: ["BadTopic": 1]),
            WorkResult(item: Self.item(2, of: one), counts: counts, failures: ["BadTopic": 2, "TooLarge": 1]),
            WorkResult(
                item: Self.item(3, of: two), stopReason: "APNs refused the app's credentials",
                remainders: [PageRemainder(after: DeviceToken(bytes: [4]), through: nil, waiting: 5, delay: .seconds(1), reason: "refused")]),
            // A retraction whose app is not known (deleted meanwhile): its dead tokens have no app to go to.
            WorkResult(item: Self.item(4, of: orphan), deadTokens: [DeadToken(token: DeviceToken(bytes: [8]), since: Date(), reason: "x")]),
        ]
        let finished = FinishedWork(results, appIDs: [one: 10, two: 20])
        #expect(finished.counts[one]?.sent == 6 && finished.counts[one]?.failed == 2)
        #expect(finished.failures[one] == ["BadTopic": 3, "TooLarge": 1])
        #expect(finished.retries.map(\.0) == [one])
        #expect(finished.dead[10]?.map(\.token) == [DeviceToken(bytes: [9])])
        #expect(finished.dead.keys.sorted() == [10])
        #expect(finished.stops == [two: "APNs refused the app's credentials"])
        #expect(finished.remainders.map(\.0) == [two] && finished.remainders.first?.1.waiting == 5)
    }

    @Test func aRemainderCoversTheTokensAfterItsStartThroughItsEnd() {
        func token(_ byte: UInt8) -> DeviceToken { DeviceToken(bytes: [byte]) }
        let middle = PageRemainder(after: token(2), through: token(5), waiting: 3, delay: .seconds(1), reason: "refused")
        #expect([1, 2, 3, 5, 6].map { middle.covers(token($0)) } == [false, false, true, true, false])
        let open = PageRemainder(after: nil, through: nil, waiting: 1, delay: .seconds(1), reason: "refused")
        #expect(open.covers(token(0)) && open.covers(token(255)))
    }

    @Test func nothingFinishedAddsUpToNothing() {
        let finished = FinishedWork([], appIDs: [:])
        #expect(finished.counts.isEmpty && finished.retries.isEmpty && finished.dead.isEmpty && finished.stops.isEmpty)
    }
}

/// A statement that never answers (PostgreSQL restarted under it) must not
/// hold its caller forever.
@Suite("Answer limit")
struct AnswerLimitTests {
    @Test func aBodyThatNeverAnswersCountsAsALostConnection() async throws {
        let started = ContinuousClock.now
        let error = await #expect(throws: RetractStore.NoAnswer.self) {
            try await RetractStore.answering(within: .milliseconds(200)) { () async throws -> Int in
                // Never resumed, and deaf to cancellation: what a hung query looks like from here.
                await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
                return 1
            }
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        let mapped = StoreError.from(try #require(error), during: "splitting work item 6")
        #expect(mapped.code == .connectionLost)
        #expect(mapped.message == "splitting work item 6: no answer from the database within 0.2 seconds")
    }

    @Test func anAnswerInTimeAndAnErrorInTimeComeThrough() async throws {
        #expect(try await RetractStore.answering(within: .seconds(5)) { 42 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await RetractStore.answering(within: .seconds(5)) { () async throws -> Int in throw Refused() }
        }
        #expect(try await RetractStore.answering(within: nil) { 7 } == 7)
    }
}
