import Foundation
import RetractKit
import Testing

/// The Notification Service Extension reading the device feed on each push
/// (``RetractionServiceExtension/FeedCatchUp``), against a feed answered in
/// this process.
@Suite("Service extension catch-up")
struct FeedCatchUpTests {
    typealias CatchUp = RetractionServiceExtension.FeedCatchUp

    static let phone = DeviceToken(bytes: [0xAB, 0xCD, 0x01, 0x02])
    /// The next message, an original never retracted.
    static let next =
        #"{"aps": {"alert": {"body": "see you"}, "mutable-content": 1}, "notificationCustomData": {"pushNotificationReferenceId": "m2"}}"#

    /// `m1` showing, and `m3`, neither of them retracted by a push that reached the phone.
    func center() throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(delivered: [
            DeliveredNotification(
                identifier: "uuid-1", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m1"}}"#)),
            DeliveredNotification(
                identifier: "uuid-3", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m3"}}"#)),
        ])
    }

    /// An App Group's cursor with the phone's token saved, as the app saves it when it registers.
    func savedCursor() throws -> FeedCursor {
        let cursor = FeedCursor(storage: InMemoryTombstoneStorage())
        try cursor.save(token: Self.phone)
        return cursor
    }

    func service(
        _ center: some DeliveredNotificationCenter, stub: FeedStub, cursor: FeedCursor, tombstones: Tombstones? = nil,
        hasFilteringEntitlement: Bool = false, budget: TimeInterval = CatchUp.defaultBudget, maximumPages: Int = CatchUp.defaultMaximumPages
    ) -> RetractionServiceExtension {
        RetractionServiceExtension(
            center: center, tombstones: tombstones, hasFilteringEntitlement: hasFilteringEntitlement,
            catchUp: CatchUp(feed: stub.feed, cursor: cursor, budget: budget, maximumPages: maximumPages))
    }

    @Test func theNextMessageRemovesWhatTheFeedNamesAndKeepsTheCursor() async throws {
        let center = try center()
        let cursor = try savedCursor()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let stub = FeedStub { request in
            request == 0 ? .page([["m1"]], cursor: "c1") : .page([], cursor: "c1")
        }
        let service = service(center, stub: stub, cursor: cursor, tombstones: tombstones)

        let report = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.decision == .passThrough)
        #expect(!report.wasRetracted)
        #expect(report.catchUp == .caughtUp(.removed(["uuid-1"]), references: ["m1"]))
        #expect(center.delivered.map(\.identifier) == ["uuid-3"])
        #expect(cursor.cursor == "c1")
        // Recorded, so that m1 arriving late, after this, is recognised.
        #expect(tombstones.references == ["m1"])

        let again = await service.handle(identifier: "uuid-4", userInfo: try userInfo(Self.next))
        #expect(again.catchUp == .caughtUp(.noMatch, references: []))
        #expect(stub.sinces == [nil, "c1"])
    }

    @Test func theCursorMovesOnlyOnceTheRemovalIsDone() async throws {
        let cursor = try savedCursor()
        let center = CursorWatchingCenter(wrapping: try center(), cursor: cursor)
        // The first read names m1, the second m3: each removes one.
        let stub = FeedStub { request in .page([[request == 0 ? "m1" : "m3"]], cursor: "c\(request + 1)") }
        let service = service(center, stub: stub, cursor: cursor)

        _ = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        _ = await service.handle(identifier: "uuid-5", userInfo: try userInfo(Self.next))
        #expect(center.cursorsAtRemoval == [nil, "c1"])
        #expect(cursor.cursor == "c2")
        #expect(stub.sinces == [nil, "c1"])
    }

    @Test(arguments: [
        FeedStub.Answer.offline,
        .status(
            401, #"{"type": "https://retract.dev/problems/unauthorized", "title": "Unauthorized", "status": 401, "detail": "unknown key"}"#),
        .status(503, "overloaded"),
        .status(200, #"{"unexpected": true}"#),
    ])
    func aFeedThatCannotBeReadLeavesThePushAndTheCursorAlone(answer: FeedStub.Answer) async throws {
        let center = try center()
        let cursor = try savedCursor()
        // A first catch-up sets the cursor; then the feed fails.
        let stub = FeedStub { request in request == 0 ? .page([], cursor: "c1") : answer }
        let service = service(center, stub: stub, cursor: cursor, hasFilteringEntitlement: true)
        _ = await service.handle(identifier: "uuid-0", userInfo: try userInfo(Self.next))
        #expect(cursor.cursor == "c1")

        let report = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.decision == .passThrough)
        #expect(!report.wasRetracted)
        guard case .failed = report.catchUp else {
            Issue.record("expected a failed catch-up, got \(report.catchUp)")
            return
        }
        #expect(center.delivered.count == 2)
        #expect(cursor.cursor == "c1")
    }

    @Test func aRefusedKeyIsReportedWithItsStatusAndType() async throws {
        let stub = FeedStub(
            always: .status(401, #"{"type": "https://retract.dev/problems/unauthorized", "detail": "unknown key"}"#))
        let report = await service(try center(), stub: stub, cursor: try savedCursor())
            .handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        guard case .failed(let error) = report.catchUp else {
            Issue.record("expected a failed catch-up, got \(report.catchUp)")
            return
        }
        #expect(error.status == 401)
        #expect(error.type == "https://retract.dev/problems/unauthorized")
    }

    @Test(.timeLimit(.minutes(1))) func aFeedThatDoesNotAnswerCostsThePushNoMoreThanTheBudget() async throws {
        let center = try center()
        let cursor = try savedCursor()
        let stub = FeedStub(always: .silence)
        let service = service(center, stub: stub, cursor: cursor, budget: 0.5)
        let info = try userInfo(Self.next)

        let start = ContinuousClock.now
        let calls = Reports()
        let report = await withCheckedContinuation { (continuation: CheckedContinuation<RetractionServiceExtension.Report, Never>) in
            service.handle(identifier: "uuid-2", userInfo: info) { report in
                calls.append(report)
                continuation.resume(returning: report)
            }
        }
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(500))
        #expect(waited < .seconds(3))
        #expect(report.catchUp == .timedOut)
        #expect(report.decision == .passThrough)
        #expect(center.delivered.count == 2)
        #expect(cursor.cursor == nil)
        #expect(stub.requestCount == 1)
        // Called once: a cancelled read that ends later calls nothing.
        try await Task.sleep(for: .milliseconds(300))
        #expect(calls.count == 1)
    }

    @Test(.timeLimit(.minutes(1))) func aRemovalThatOutlastsTheBudgetMovesTheCursorOnlyWhenItIsDone() async throws {
        let cursor = try savedCursor()
        let center = StalledCenter(wrapping: try center())
        let stub = FeedStub(always: .page([["m1"]], cursor: "c1"))
        let service = service(center, stub: stub, cursor: cursor, budget: 0.3)

        let report = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.catchUp == .timedOut)
        #expect(report.decision == .passThrough)
        #expect(cursor.cursor == nil)

        // Notification Center answers at last: the removal ends, then the cursor moves.
        center.release()
        try await waitUntil { cursor.cursor == "c1" }
        #expect(center.delivered.map(\.identifier) == ["uuid-3"])
    }

    @Test(arguments: [false, true])
    func thePushItselfIsNotShownWhenTheFeedNamesIt(hasFilteringEntitlement: Bool) async throws {
        // No tombstones: the feed's answer alone decides.
        let stub = FeedStub(always: .page([["m2"]], cursor: "c1"))
        let service = service(try center(), stub: stub, cursor: try savedCursor(), hasFilteringEntitlement: hasFilteringEntitlement)
        let report = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.decision == (hasFilteringEntitlement ? .suppress : .replaceBody("This message was deleted")))
        #expect(report.wasRetracted)
        #expect(report.catchUp == .caughtUp(.noMatch, references: ["m2"]))

        // Sent with its reference as collapse id and nothing else: found by identifier.
        let byIdentifier = await service.handle(
            identifier: "m2", userInfo: try userInfo(#"{"aps": {"alert": "hi", "mutable-content": 1}}"#))
        #expect(byIdentifier.wasRetracted)
    }

    @Test func aCarrierStillRemovesWhatItNamesAfterTheCatchUp() async throws {
        let center = try center()
        let stub = FeedStub(always: .page([["m1"]], cursor: "c1"))
        let service = service(center, stub: stub, cursor: try savedCursor(), hasFilteringEntitlement: true)
        let carrier = try userInfo(
            """
            {"aps": {"alert": {"body": "This message was deleted"}, "mutable-content": 1},
             "notificationCustomData": {"pushNotificationReferenceId": "m3", "isReferredNotificationMustRemoved": true}}
            """)
        let report = await service.handle(identifier: "m3", userInfo: carrier)
        #expect(report.decision == .suppress)
        #expect(report.retraction.outcome == .removed(["uuid-3"]))
        #expect(report.catchUp == .caughtUp(.removed(["uuid-1"]), references: ["m1"]))
        #expect(center.delivered.isEmpty)
    }

    @Test func withoutASavedTokenNothingIsRead() async throws {
        let stub = FeedStub(always: .page([["m1"]], cursor: "c1"))
        let center = try center()
        let cursor = FeedCursor(storage: InMemoryTombstoneStorage())
        let report = await service(center, stub: stub, cursor: cursor).handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.catchUp == .noToken)
        #expect(report.decision == .passThrough)
        #expect(stub.requestCount == 0)
        #expect(center.delivered.count == 2)
    }

    @Test func aDeviceFarBehindReadsABoundedNumberOfPagesPerPush() async throws {
        let cursor = try savedCursor()
        let stub = FeedStub { request in .page([["old-\(request)"]], cursor: "c\(request + 1)", hasMore: true) }
        let service = service(try center(), stub: stub, cursor: cursor, maximumPages: 3)
        let report = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.catchUp == .caughtUp(.noMatch, references: ["old-0", "old-1", "old-2"]))
        #expect(cursor.cursor == "c3")
        // The next push goes on from there.
        _ = await service.handle(identifier: "uuid-4", userInfo: try userInfo(Self.next))
        #expect(stub.sinces == [nil, "c1", "c2", "c3", "c4", "c5"])
    }

    @Test func anotherTokenStartsTheFeedAgain() async throws {
        let cursor = try savedCursor()
        let stub = FeedStub(always: .page([], cursor: "c1"))
        let service = service(InMemoryNotificationCenter(), stub: stub, cursor: cursor)
        _ = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(cursor.cursor == "c1")
        // The same token saved again at the next launch keeps the cursor.
        try cursor.save(token: Self.phone)
        #expect(cursor.cursor == "c1")
        try cursor.save(token: DeviceToken(bytes: [0x01]))
        #expect(cursor.hasToken)
        #expect(cursor.cursor == nil)
        try cursor.save(fcmToken: "fcm-registration")
        #expect(cursor.cursor == nil)
    }

    @Test func theAppAtLaunchSharesTheExtensionsCursor() async throws {
        let center = try center()
        let cursor = try savedCursor()
        let stub = FeedStub { request in request == 0 ? .page([["m1"]], cursor: "c1") : .page([], cursor: "c1") }
        let outcome = try await stub.feed.catchUp(from: cursor, handler: RetractionHandler(center: center))
        #expect(outcome == .removed(["uuid-1"]))
        #expect(cursor.cursor == "c1")

        let report = await service(center, stub: stub, cursor: cursor).handle(identifier: "uuid-2", userInfo: try userInfo(Self.next))
        #expect(report.catchUp == .caughtUp(.noMatch, references: []))
        #expect(stub.sinces == [nil, "c1"])
        #expect(
            try await stub.feed.catchUp(from: FeedCursor(storage: InMemoryTombstoneStorage()), handler: RetractionHandler(center: center))
                == nil)
    }

    @Test func anEmptyPagesValidatorIsSentFromItsCursorAnd304IsNothingNew() async throws {
        let center = try center()
        let cursor = try savedCursor()
        let stub = FeedStub { request in
            switch request {
            case 0: .page([["m1"]], cursor: "c1", etag: "\"listed\"")
            case 1: .page([], cursor: "c1", etag: "\"empty-1\"")
            case 2: .notModified(etag: "\"empty-2\"")
            case 3: .notModified(etag: nil)
            default: .page([["m3"]], cursor: "c2", etag: "\"listed-2\"")
            }
        }
        let handler = RetractionHandler(center: center)
        #expect(try await stub.feed.catchUp(from: cursor, handler: handler) == .removed(["uuid-1"]))
        // A page that listed some is read again from its cursor without its validator.
        #expect(try await stub.feed.catchUp(from: cursor, handler: handler) == .noMatch)
        // An empty one's is sent; 304 keeps the cursor and takes the validator it names, or keeps the one sent.
        #expect(try await stub.feed.catchUp(from: cursor, handler: handler) == .noMatch)
        #expect(try await stub.feed.catchUp(from: cursor, handler: handler) == .noMatch)
        #expect(try await stub.feed.catchUp(from: cursor, handler: handler) == .removed(["uuid-3"]))
        #expect(stub.sinces == [nil, "c1", "c1", "c1", "c1"])
        #expect(stub.validators == [nil, nil, "\"empty-1\"", "\"empty-2\"", "\"empty-2\""])
        #expect(cursor.cursor == "c2")

        // Without a cursor, no validator is sent: it would not be this page's.
        let page = try await stub.feed.page(for: Self.phone, since: nil, validator: "\"empty-1\"")
        #expect(!page.notModified)
        #expect(stub.validators.last == .some(nil))
    }

    @Test func aCursorSavedByRetractKit02IsReadAndSentWithoutAValidator() async throws {
        let storage = InMemoryTombstoneStorage()
        storage.save(Data(#"{"device":{"pathToken":"abcd0102"},"cursor":"c7"}"#.utf8))
        let cursor = FeedCursor(storage: storage)
        #expect(cursor.cursor == "c7")
        let stub = FeedStub(always: .page([["m1"]], cursor: "c8"))
        #expect(try await stub.feed.catchUp(from: cursor, handler: RetractionHandler(center: try center())) == .removed(["uuid-1"]))
        #expect(stub.sinces == ["c7"])
        #expect(stub.validators == [nil])
        #expect(cursor.cursor == "c8")
    }

    @Test func theCursorKeepsOutOfTheTombstonesWay() throws {
        // One UserDefaults suite, two keys: neither overwrites the other.
        let suite = "group.RetractKitTests.\(UUID().uuidString)"
        defer { UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite) }
        let group = try AppGroup(identifier: suite, containerURL: FileManager.default.temporaryDirectory)
        let cursor = FeedCursor(appGroup: group)
        let tombstones = Tombstones(storage: UserDefaultsTombstoneStorage(appGroup: group))
        try cursor.save(token: Self.phone)
        try tombstones.record(["m1"])
        #expect(cursor.hasToken)
        #expect(tombstones.references == ["m1"])
    }
}

/// Polls `condition` for up to ten seconds.
func waitUntil(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<200 {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("condition not met within ten seconds", sourceLocation: sourceLocation)
}

/// Reports called back, from whichever thread.
private final class Reports: @unchecked Sendable {
    // @unchecked: `list` is only touched while holding `lock`.
    private let lock = NSLock()
    private var list: [RetractionServiceExtension.Report] = []

    func append(_ report: RetractionServiceExtension.Report) { lock.withLock { list.append(report) } }
    var count: Int { lock.withLock { list.count } }
}

/// Notification Center that notes where the feed's cursor stood at each removal.
private final class CursorWatchingCenter: DeliveredNotificationCenter, @unchecked Sendable {
    // @unchecked: `watched` is only touched while holding `lock`; the rest is immutable and Sendable.
    private let inner: InMemoryNotificationCenter
    private let cursor: FeedCursor
    private let lock = NSLock()
    private var watched: [String?] = []

    init(wrapping inner: InMemoryNotificationCenter, cursor: FeedCursor) {
        self.inner = inner
        self.cursor = cursor
    }

    var cursorsAtRemoval: [String?] { lock.withLock { watched } }

    func deliveredNotifications() async -> [DeliveredNotification] {
        await inner.deliveredNotifications()
    }

    func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        let now = cursor.cursor
        lock.withLock { watched.append(now) }
        inner.removeDeliveredNotifications(withIdentifiers: identifiers)
    }
}

/// Notification Center that does not answer until released, and ignores cancellation.
private final class StalledCenter: DeliveredNotificationCenter, @unchecked Sendable {
    // @unchecked: `released` and `waiting` are only touched while holding `lock`.
    private let inner: InMemoryNotificationCenter
    private let lock = NSLock()
    private var released = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(wrapping inner: InMemoryNotificationCenter) {
        self.inner = inner
    }

    var delivered: [DeliveredNotification] { inner.delivered }

    func release() {
        let resumed = lock.withLock {
            released = true
            defer { waiting = [] }
            return waiting
        }
        for continuation in resumed { continuation.resume() }
    }

    func deliveredNotifications() async -> [DeliveredNotification] {
        await withCheckedContinuation { continuation in
            let now = lock.withLock {
                if !released { waiting.append(continuation) }
                return released
            }
            if now { continuation.resume() }
        }
        return await inner.deliveredNotifications()
    }

    func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        inner.removeDeliveredNotifications(withIdentifiers: identifiers)
    }
}
