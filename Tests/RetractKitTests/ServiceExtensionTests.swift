import Foundation
import RetractKit
import Testing

@Suite("Notification Service Extension")
struct ServiceExtensionTests {
    /// A `service-extension` carrier as the server sends it, with the collapse id of `m1`.
    static let carrier = """
        {"aps": {"alert": {"body": "This message was deleted"}, "mutable-content": 1},
         "notificationCustomData": {"pushNotificationReferenceIds": ["m1", "m2"], "isReferredNotificationMustRemoved": true}}
        """
    /// What an original retracted before it arrived shows without the filtering entitlement.
    static let deleted = RetractionServiceExtension.Decision.replaceBody("This message was deleted")
    static let lateOriginal = """
        {"aps": {"alert": {"title": "Ann", "subtitle": "Lunch", "body": "the secret"}, "mutable-content": 1},
         "notificationCustomData": {"pushNotificationReferenceId": "m2"}}
        """

    /// Originals showing before the carrier: `m1` sent with its reference as
    /// collapse id, `m2` under an identifier of its own, `m3` not retracted.
    func center() throws -> InMemoryNotificationCenter {
        InMemoryNotificationCenter(delivered: [
            DeliveredNotification(
                identifier: "m1", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m1"}}"#)),
            DeliveredNotification(
                identifier: "uuid-2", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m2"}}"#)),
            DeliveredNotification(
                identifier: "uuid-3", userInfo: try userInfo(#"{"notificationCustomData": {"pushNotificationReferenceId": "m3"}}"#)),
        ])
    }

    @Test func carrierWithoutTheEntitlementRemovesTheOriginalsAndIsShown() async throws {
        let center = try center()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: false)
        let report = await service.handle(identifier: "m1", userInfo: try userInfo(Self.carrier))
        #expect(report.decision == .passThrough)
        #expect(report.retraction == RetractionReport(outcome: .removed(["m1", "uuid-2"]), references: ["m1", "m2"]))
        #expect(!report.wasRetracted)
        #expect(center.delivered.map(\.identifier) == ["uuid-3"])
        #expect(tombstones.references.sorted() == ["m1", "m2"])
    }

    @Test func carrierWithTheEntitlementIsSuppressed() async throws {
        let center = try center()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: true)
        #expect(await service.decide(identifier: "m1", userInfo: try userInfo(Self.carrier)) == .suppress)
        #expect(center.delivered.map(\.identifier) == ["uuid-3"])
        #expect(tombstones.references.sorted() == ["m1", "m2"])
    }

    @Test func aCarrierThatArrivesAgainIsStillACarrier() async throws {
        // Its identifier is a retracted reference by then; it must not be taken
        // for a late original and shown with the app's text instead of the server's.
        let service = RetractionServiceExtension(
            center: try center(), tombstones: Tombstones(storage: InMemoryTombstoneStorage()), hasFilteringEntitlement: false)
        let carrier = try userInfo(Self.carrier)
        _ = await service.handle(identifier: "m1", userInfo: carrier)
        let again = await service.handle(identifier: "m1", userInfo: carrier)
        #expect(again == Report(decision: .passThrough, retraction: RetractionReport(outcome: .noMatch, references: ["m1", "m2"])))
    }

    @Test func lateOriginalWithoutTheEntitlementShowsTheRetractionText() async throws {
        // The carrier comes first, in one run of the extension; the original
        // later, in another that shares only the app group's storage.
        let storage = InMemoryTombstoneStorage()
        let center = InMemoryNotificationCenter()
        let first = RetractionServiceExtension(center: center, tombstones: Tombstones(storage: storage), hasFilteringEntitlement: false)
        let carrier = await first.handle(identifier: "m1", userInfo: try userInfo(Self.carrier))
        #expect(carrier.retraction.outcome == .noMatch)

        let later = RetractionServiceExtension(center: center, tombstones: Tombstones(storage: storage), hasFilteringEntitlement: false)
        let report = await later.handle(identifier: "uuid-2", userInfo: try userInfo(Self.lateOriginal))
        #expect(report == Report(decision: Self.deleted, retraction: .init(outcome: .notARetraction), wasRetracted: true))
        // Sent with its reference as collapse id and nothing else: found by identifier.
        #expect(
            await later.decide(identifier: "m1", userInfo: try userInfo(#"{"aps": {"alert": "the secret", "mutable-content": 1}}"#))
                == Self.deleted)
    }

    @Test func lateOriginalWithTheEntitlementIsSuppressed() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let center = InMemoryNotificationCenter()
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: true)
        #expect(await service.decide(identifier: "m1", userInfo: try userInfo(Self.carrier)) == .suppress)
        let report = await service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.lateOriginal))
        #expect(report.decision == .suppress)
        #expect(report.wasRetracted)
    }

    @Test func theAppsOwnRetractionTextReplacesTheBody() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        // Recorded by the app's RetractionHandler, from a silent retraction.
        _ = await RetractionHandler(center: InMemoryNotificationCenter(), tombstones: tombstones).retract(["m2"])
        let service = RetractionServiceExtension(
            center: InMemoryNotificationCenter(), tombstones: tombstones, hasFilteringEntitlement: false,
            retractionText: "Nachricht gelöscht")
        #expect(await service.decide(identifier: "uuid-2", userInfo: try userInfo(Self.lateOriginal)) == .replaceBody("Nachricht gelöscht"))
    }

    @Test(arguments: [false, true])
    func originalNeverRetractedPassesThrough(hasFilteringEntitlement: Bool) async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["m1", "m2"])
        let center = try center()
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: hasFilteringEntitlement)
        let original = try userInfo(
            #"{"aps": {"alert": {"body": "hello"}, "mutable-content": 1}, "notificationCustomData": {"pushNotificationReferenceId": "m4"}}"#
        )
        let report = await service.handle(identifier: "m4", userInfo: original)
        #expect(report == Report(decision: .passThrough, retraction: .init(outcome: .notARetraction)))
        #expect(center.delivered.count == 3)
    }

    @Test func originalPassesThroughWithoutTombstones() async throws {
        let service = RetractionServiceExtension(center: InMemoryNotificationCenter(), tombstones: nil, hasFilteringEntitlement: true)
        #expect(await service.decide(identifier: "m2", userInfo: try userInfo(Self.lateOriginal)) == .passThrough)
    }

    @Test func carrierInTheLegacyDialect() async throws {
        let center = InMemoryNotificationCenter(delivered: [
            DeliveredNotification(
                identifier: "a2", userInfo: try userInfo(#"{"notifcationCustomData": {"pushNotificationReferanceId": 233}}"#)),
            DeliveredNotification(identifier: "233"),
            DeliveredNotification(identifier: "a3", referenceID: 234),
        ])
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: false)
        let carrier = try userInfo(
            """
            {"aps": {"alert": {"body": "This message was deleted"}, "mutable-content": 1},
             "notifcationCustomData": {"pushNotificationReferanceId": 233, "isReferedNotificationMustRemoved": true}}
            """)
        let report = await service.handle(identifier: "233", userInfo: carrier)
        #expect(report.decision == .passThrough)
        #expect(report.retraction.outcome == .removed(["a2", "233"]))
        #expect(center.delivered.map(\.identifier) == ["a3"])
        #expect(tombstones.references == [233])

        // A late original in the same dialect, its reference an integer.
        let late = try userInfo(#"{"aps": {"alert": "the secret"}, "notifcationCustomData": "{\"pushNotificationReferanceId\": 233}"}"#)
        #expect(await service.decide(identifier: "a9", userInfo: late) == Self.deleted)
    }

    @Test func summaryNamingARetractedReference() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["m2"])
        let summary = try userInfo(
            """
            {"aps": {"alert": {"title": "Ann", "body": "3 new messages"}, "mutable-content": 1},
             "notificationCustomData": {"pushNotificationReferenceIds": ["m1", "m2", "m3"]}}
            """)
        let without = RetractionServiceExtension(
            center: InMemoryNotificationCenter(), tombstones: tombstones, hasFilteringEntitlement: false)
        #expect(await without.decide(identifier: "summary-1", userInfo: summary) == Self.deleted)
        let with = RetractionServiceExtension(center: InMemoryNotificationCenter(), tombstones: tombstones, hasFilteringEntitlement: true)
        #expect(await with.decide(identifier: "summary-1", userInfo: summary) == .suppress)

        // Without the removal flag, a summary is an original, not a carrier: it removes nothing.
        let center = try center()
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: false)
        #expect((await service.handle(identifier: "summary-2", userInfo: summary)).retraction.outcome == .notARetraction)
        #expect(center.delivered.count == 3)
    }

    @Test(arguments: [
        #"{"aps": {"alert": "hi", "mutable-content": 1}, "notificationCustomData": "{broken"}"#,
        #"{"aps": {"alert": "hi", "mutable-content": 1}, "notificationCustomData": 7}"#,
        #"{"aps": {"alert": "hi", "mutable-content": 1}, "notificationCustomData": {"pushNotificationReferenceId": ""}}"#,
        // A carrier whose only reference cannot be read is no carrier: nothing to remove.
        """
        {"aps": {"alert": "hi", "mutable-content": 1},
         "notificationCustomData": {"pushNotificationReferenceId": 1.5, "isReferredNotificationMustRemoved": true}}
        """,
    ])
    func malformedCustomDataPassesThrough(push: String) async throws {
        let center = try center()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["m1"])
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: true)
        let report = await service.handle(identifier: "uuid-9", userInfo: try userInfo(push))
        #expect(report.decision == .passThrough)
        #expect(report.retraction.outcome == .notARetraction)
        #expect(!report.retraction.diagnostics.isEmpty)
        #expect(center.delivered.count == 3)
        #expect(tombstones.references == ["m1"])
    }

    @Test(arguments: [false, true])
    func appPushWithoutCustomDataPassesThrough(hasFilteringEntitlement: Bool) async throws {
        let center = try center()
        let service = RetractionServiceExtension(
            center: center, tombstones: Tombstones(storage: InMemoryTombstoneStorage()), hasFilteringEntitlement: hasFilteringEntitlement)
        let push = try userInfo(#"{"aps": {"alert": {"title": "Ann", "body": "hello"}, "mutable-content": 1}, "thread": "t-1"}"#)
        let report = await service.handle(identifier: "uuid-7", userInfo: push)
        #expect(report == Report(decision: .passThrough, retraction: .init(outcome: .notARetraction)))
        #expect(center.delivered.count == 3)
    }

    @MainActor
    @Test func asyncFormRunsOnTheCallersActorWithNonSendableUserInfo() async throws {
        // userInfo is not Sendable: this must compile and run without crossing
        // an isolation boundary.
        let info: [AnyHashable: Any] = try userInfo(Self.carrier)
        let service = RetractionServiceExtension(center: try center(), tombstones: nil, hasFilteringEntitlement: true)
        #expect(await service.decide(identifier: "m1", userInfo: info) == .suppress)
    }

    @Test(.timeLimit(.minutes(1))) func completionFormCallsBackOnceAndAtOnceUnlessACarrier() async throws {
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        try tombstones.record(["m2"])
        let service = RetractionServiceExtension(center: try center(), tombstones: tombstones, hasFilteringEntitlement: false)
        let calls = Calls()

        // Not a carrier: decided before `handle` returns.
        service.handle(identifier: "uuid-2", userInfo: try userInfo(Self.lateOriginal)) { calls.append($0.decision) }
        #expect(calls.decisions == [Self.deleted])

        let info = try userInfo(Self.carrier)
        let report = await withCheckedContinuation { (continuation: CheckedContinuation<Report, Never>) in
            service.handle(identifier: "m1", userInfo: info) { report in
                calls.append(report.decision)
                continuation.resume(returning: report)
            }
        }
        #expect(report.retraction.outcome == .removed(["m1", "uuid-2"]))
        #expect(calls.decisions == [Self.deleted, .passThrough])
    }
}

private typealias Report = RetractionServiceExtension.Report

/// Decisions called back, from whichever thread.
private final class Calls: @unchecked Sendable {
    // @unchecked: `list` is only touched while holding `lock`.
    private let lock = NSLock()
    private var list: [RetractionServiceExtension.Decision] = []

    func append(_ decision: RetractionServiceExtension.Decision) { lock.withLock { list.append(decision) } }
    var decisions: [RetractionServiceExtension.Decision] { lock.withLock { list } }
}

// MARK: - The UserNotifications entry point's shape

/// Stand-ins for `UNNotificationRequest` and `UNMutableNotificationContent`:
/// classes that are not Sendable.
final class StandInContent {
    var title: String
    var subtitle: String
    var body: String
    var userInfo: [AnyHashable: Any]

    init(title: String = "", subtitle: String = "", body: String = "", userInfo: [AnyHashable: Any] = [:]) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.userInfo = userInfo
    }

    func mutableCopy() -> StandInContent { StandInContent(title: title, subtitle: subtitle, body: body, userInfo: userInfo) }
}

final class StandInRequest {
    let identifier: String
    let content: StandInContent

    init(identifier: String, content: StandInContent) {
        self.identifier = identifier
        self.content = content
    }
}

extension RetractionServiceExtension {
    /// The shape of RetractKit's `didReceive(_:withContentHandler:)`
    /// (RetractionServiceExtension.swift), which only builds on Apple
    /// platforms: a nonisolated method handing a non-Sendable request and a
    /// plain content handler to the decision. This copy keeps its isolation
    /// checked on Linux.
    func didReceiveLikeTheServiceExtensionEntryPoint(
        _ request: StandInRequest, withContentHandler contentHandler: @escaping (StandInContent) -> Void
    ) {
        let pending = StandInPendingContent(request: request, contentHandler: contentHandler)
        handle(identifier: request.identifier, userInfo: request.content.userInfo) { report in pending.deliver(report.decision) }
    }
}

private struct StandInPendingContent: @unchecked Sendable {
    // @unchecked: as the original's, whose content handler iOS takes on any thread.
    let request: StandInRequest
    let contentHandler: (StandInContent) -> Void

    func deliver(_ decision: RetractionServiceExtension.Decision) {
        switch decision {
        case .passThrough:
            contentHandler(request.content)
        case .suppress:
            contentHandler(StandInContent())
        case .replaceBody(let body):
            let content = request.content.mutableCopy()
            content.title = ""
            content.subtitle = ""
            content.body = body
            contentHandler(content)
        case .showEdit(let title, let body):
            let content = request.content.mutableCopy()
            if let title { content.title = title }
            content.body = body
            contentHandler(content)
        }
    }
}

@Suite("Service extension entry point shape")
struct ServiceExtensionEntryPointShapeTests {
    /// What a content handler was given, as far as the tests look.
    struct Shown: Hashable, Sendable {
        /// Whether it is the request's own content, untouched.
        var isTheRequestsContent: Bool
        var title = ""
        var subtitle = ""
        var body = ""
        /// The reference its custom data still names.
        var reference: ReferenceID?
    }

    /// What the content handler got for `request`; it must be called exactly once.
    func shown(for request: StandInRequest, by service: RetractionServiceExtension) async -> Shown {
        await withCheckedContinuation { continuation in
            var calls = 0
            service.didReceiveLikeTheServiceExtensionEntryPoint(request) { content in
                calls += 1
                precondition(calls == 1, "content handler called twice")
                continuation.resume(
                    returning: Shown(
                        isTheRequestsContent: content === request.content, title: content.title, subtitle: content.subtitle,
                        body: content.body, reference: DeliveredNotification(identifier: "", userInfo: content.userInfo).referenceID))
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func mapsEachDecisionToContent() async throws {
        let center = InMemoryNotificationCenter(delivered: [DeliveredNotification(identifier: "m1")])
        let storage = InMemoryTombstoneStorage()
        let service = RetractionServiceExtension(center: center, tombstones: Tombstones(storage: storage), hasFilteringEntitlement: false)

        let carrier = StandInRequest(
            identifier: "m1",
            content: StandInContent(body: "This message was deleted", userInfo: try userInfo(ServiceExtensionTests.carrier)))
        #expect(await shown(for: carrier, by: service).isTheRequestsContent)
        #expect(center.delivered.isEmpty)

        let late = StandInRequest(
            identifier: "uuid-2",
            content: StandInContent(
                title: "Ann", subtitle: "Lunch", body: "the secret", userInfo: try userInfo(ServiceExtensionTests.lateOriginal)))
        // A copy, its custom data kept so that a later retraction still finds it.
        #expect(
            await shown(for: late, by: service)
                == Shown(isTheRequestsContent: false, body: "This message was deleted", reference: "m2"))
        #expect(late.content.body == "the secret")

        let filtering = RetractionServiceExtension(center: center, tombstones: Tombstones(storage: storage), hasFilteringEntitlement: true)
        #expect(await shown(for: late, by: filtering) == Shown(isTheRequestsContent: false))

        let other = StandInRequest(identifier: "uuid-8", content: StandInContent(body: "hello"))
        #expect(await shown(for: other, by: filtering) == Shown(isTheRequestsContent: true, body: "hello"))
    }
}
