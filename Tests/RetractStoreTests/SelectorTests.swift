import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Retraction by selector in the ledger: what a label takes, page by page;
/// the retraction made of it; deliveries recorded later; the device feed.
@Suite("Selectors")
struct SelectorTests {
    /// `messages` deliveries of conversation `thread` to each of `devices`,
    /// one reference per message, `gap` seconds apart ending at `end`.
    static func conversation(
        _ store: RetractStore, app: App, thread: String, messages: Int, devices: some Sequence<Int>, sender: String = "ann",
        end: Date = Date(), gap: TimeInterval = 1
    ) async throws {
        var deliveries: [Delivery] = []
        for message in 0..<messages {
            for device in devices {
                deliveries.append(
                    Delivery(
                        appID: app.id, reference: ReferenceID("\(thread)-m\(message)"), token: Fixture.token(device),
                        sentAt: end.addingTimeInterval(-gap * Double(messages - message)),
                        labels: DeliveryLabels(thread: thread, sender: sender)))
            }
        }
        try await store.record(deliveries)
    }

    /// Every device of the selector, page by page as the workers read it, and the pages it took.
    static func allDevices(
        _ store: RetractStore, app: App, _ selector: RetractionSelector, limit: Int
    ) async throws -> (
        devices: [DeviceReferences], pages: Int
    ) {
        var devices: [DeviceReferences] = []
        var cursor: DeviceToken?
        var pages = 0
        while true {
            let page = try await store.devicePage(appID: app.id, selector: selector, after: cursor, limit: limit)
            pages += 1
            devices += page.devices
            #expect(page.devices.count <= limit)
            guard page.mayHaveMore, let last = page.last else { break }
            cursor = last
        }
        return (devices, pages)
    }

    @Test func aSelectorsPagesHoldEveryDeviceOnceWithAllOfItsReferences() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            // 30 devices of 12 messages each: 360 rows, many more than a page reads at once (6 for a page of 5).
            try await Self.conversation(store, app: app, thread: "c-1", messages: 12, devices: 0..<30)
            try await Self.conversation(store, app: app, thread: "c-2", messages: 3, devices: 0..<30)
            let (devices, pages) = try await Self.allDevices(
                store, app: app, RetractionSelector(.thread, "c-1", sentBefore: Date().addingTimeInterval(1)), limit: 5)
            #expect(devices.map(\.token) == (0..<30).map(Fixture.token))
            let references = (0..<12).map { ReferenceID("c-1-m\($0)") }.sorted()
            #expect(devices.allSatisfy { $0.references == references })
            // Devices of 12 rows in reads of 6: each read alone, one device a page.
            #expect(pages >= 30)

            // One device with more deliveries than a whole read is read alone, every one of them.
            try await Self.conversation(store, app: app, thread: "c-3", messages: 50, devices: [7])
            try await Self.conversation(store, app: app, thread: "c-3", messages: 2, devices: [3, 9])
            let (crowded, _) = try await Self.allDevices(
                store, app: app, RetractionSelector(.thread, "c-3", sentBefore: Date().addingTimeInterval(1)), limit: 2)
            #expect(crowded.map(\.token) == [3, 7, 9].map(Fixture.token))
            #expect(crowded.map(\.references.count) == [2, 50, 2])

            // A campaign's one delivery per device: full pages, as for references.
            try await store.record(
                (100..<112).map {
                    Delivery(
                        appID: app.id, reference: "k-1", token: Fixture.token($0), sentAt: Date(), labels: DeliveryLabels(campaign: "k"))
                })
            let (campaign, campaignPages) = try await Self.allDevices(
                store, app: app, RetractionSelector(.campaign, "k", sentBefore: Date().addingTimeInterval(1)), limit: 5)
            #expect(campaign.map(\.token) == (100..<112).map(Fixture.token))
            #expect(campaignPages == 3)
        }
    }

    @Test func aSelectorTakesOnlyItsLabelWithinItsRange() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let other = try await Fixture.registerApp(store, name: "other")
            let now = Date()
            // ann's messages an hour ago and now; bob's now; ann's in another app.
            try await Self.conversation(store, app: app, thread: "c-1", messages: 2, devices: 0..<3, end: now.addingTimeInterval(-3600))
            try await Self.conversation(store, app: app, thread: "c-2", messages: 2, devices: 0..<3, end: now)
            try await Self.conversation(store, app: app, thread: "c-3", messages: 1, devices: 3..<5, sender: "bob", end: now)
            try await Self.conversation(store, app: other, thread: "c-1", messages: 1, devices: 0..<3, end: now)

            func references(_ selector: RetractionSelector) async throws -> Set<ReferenceID> {
                Set(try await Self.allDevices(store, app: app, selector, limit: 100).devices.flatMap(\.references))
            }
            let later = now.addingTimeInterval(1)
            #expect(
                try await references(RetractionSelector(.sender, "ann", sentBefore: later)) == ["c-1-m0", "c-1-m1", "c-2-m0", "c-2-m1"])
            #expect(
                try await references(RetractionSelector(.sender, "ann", sentAfter: now.addingTimeInterval(-60), sentBefore: later))
                    == ["c-2-m0", "c-2-m1"])
            #expect(
                try await references(RetractionSelector(.sender, "ann", sentBefore: now.addingTimeInterval(-60))) == ["c-1-m0", "c-1-m1"])
            #expect(try await references(RetractionSelector(.sender, "bob", sentBefore: later)) == ["c-3-m0"])
            #expect(try await references(RetractionSelector(.recipient, "ann", sentBefore: later)).isEmpty)
        }
    }

    @Test func aRetractionBySelectorCountsWhatItTakesAndEndsItsRangeWhenMade() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await Self.conversation(store, app: app, thread: "c-1", messages: 5, devices: 0..<4)
            try await store.record([
                Delivery(appID: app.id, reference: "c-1-m9", token: Fixture.token(0), sentAt: Date(), labels: DeliveryLabels(thread: "c-1"))
            ])
            let before = Date()
            let (dryRun, _) = try await store.createRetraction(
                RetractionRequest(
                    appID: app.id, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "t", dryRun: true))
            #expect(dryRun.state == .done)
            #expect(dryRun.counts.total == 4)
            #expect(dryRun.referencesMatched == 6)
            #expect(dryRun.mostReferences == 6)
            #expect(dryRun.references.isEmpty)
            let kept = try #require(dryRun.selector)
            #expect(kept.kind == .thread && kept.value == "c-1" && kept.sentAfter == nil)
            let end = try #require(kept.sentBefore)
            #expect(end >= before.addingTimeInterval(-1) && end <= Date().addingTimeInterval(1))

            let (made, _) = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "t"))
            #expect(made.state == .queued)
            #expect(made.counts.total == 4)
            #expect(try await store.queuedWorkCount(retractionID: made.id) == 1)
            let audit = try await Fixture.scalar(
                store, "SELECT details->>'selector' FROM audit_log WHERE subject = \(made.id.uuidString.lowercased())", as: String.self)
            #expect(audit?.hasPrefix("thread \"c-1\" sent before ") == true)
        }
    }

    /// What a target cannot say wrong is checked where it is made, once, for
    /// the API, the CLI and the console alike.
    @Test func aTargetIsReferencesOrOneSelectorWithARangeThatIsNotEmpty() throws {
        let now = Date()
        let tooMany = (0...RetractionRequest.maximumReferences).map { ReferenceID("m\($0)") }
        let bad: [([ReferenceID], RetractionSelector?, String)] = [
            ([], nil, "references: at least one reference, or one selector"),
            (tooMany, nil, "references: 1001 references; at most 1000"),
            (["m1"], RetractionSelector(.thread, "c-1"), "references: name references or a selector (here thread), not both"),
            ([], RetractionSelector(.sender, ""), "sender: must not be empty"),
            ([], RetractionSelector(.campaign, "x", sentAfter: now, sentBefore: now.addingTimeInterval(-5)), "sentAfter: "),
            ([], RetractionSelector(.campaign, "x", sentBefore: now.addingTimeInterval(3600)), "sentBefore: "),
        ]
        for (references, selector, message) in bad {
            #expect {
                try RetractionTarget(references: references, selector: selector, now: now)
            } throws: { error in
                "\(error)".hasPrefix(message)
            }
        }
        #expect(try RetractionTarget(references: ["m1", "m2"], selector: nil) == .references(["m1", "m2"]))
        let thread = RetractionSelector(.thread, "c-1")
        #expect(try RetractionTarget(references: [], selector: thread, now: now) == .selector(thread))
    }

    @Test func badRetractionRequestsAreRefusedAndNothingIsWritten() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            let bad: [(RetractionRequest, String)] = [
                (RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: ""), "requestedBy: who asked must be named"),
                (
                    RetractionRequest(appID: app.id, target: .references(["m1"]), requestedBy: "t", badge: -1),
                    "badge: -1; a badge is 0 or more"
                ),
            ]
            for (request, message) in bad {
                await #expect {
                    try await store.createRetraction(request)
                } throws: { error in
                    (error as? StoreError)?.code == .invalidInput && "\(error)".contains(message)
                }
            }
            #expect(try await Fixture.scalar(store, "SELECT count(*) FROM retractions", as: Int.self) == 0)
        }
    }

    /// The late-delivery rule for selectors: a delivery recorded after a
    /// retraction by its label, sent within the range, is retracted at once;
    /// one sent after the range is a new message and is left alone.
    @Test func aDeliveryRecordedLaterWithinTheRangeIsRetractedAtOnce() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await Self.conversation(store, app: app, thread: "c-1", messages: 2, devices: 0..<2)
            let sentBeforeTheRetraction = Date().addingTimeInterval(-1)
            let (retraction, _) = try await store.createRetraction(
                RetractionRequest(
                    appID: app.id, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "t", mode: .serviceExtension))

            let late = try await store.recordReporting([
                Delivery(
                    appID: app.id, reference: "c-1-late", token: Fixture.token(5), sentAt: sentBeforeTheRetraction,
                    labels: DeliveryLabels(thread: "c-1")),
                Delivery(
                    appID: app.id, reference: "c-9", token: Fixture.token(5), sentAt: sentBeforeTheRetraction,
                    labels: DeliveryLabels(thread: "c-9")),
            ])
            let lateID = try #require(late.lateRetractions.first)
            #expect(late.lateRetractions.count == 1)
            let made = try #require(try await store.retraction(id: lateID))
            #expect(made.references == ["c-1-late"])
            #expect(made.mode == .serviceExtension)
            #expect(made.counts.total == 1)
            #expect(made.id != retraction.id)

            // Sent after the retraction was made: the conversation goes on.
            let newer = try await store.recordReporting([
                Delivery(
                    appID: app.id, reference: "c-1-new", token: Fixture.token(5), sentAt: Date(), labels: DeliveryLabels(thread: "c-1"))
            ])
            #expect(newer.lateRetractions.isEmpty)
            // A caller about to send (send's rule) is refused for one within the range, not for a new one.
            let refused = try await store.recordReporting(
                [
                    Delivery(
                        appID: app.id, reference: "c-1-race", token: Fixture.token(6), sentAt: sentBeforeTheRetraction,
                        labels: DeliveryLabels(thread: "c-1"))
                ], ifRetracted: .refuse)
            #expect(refused.refusedAsRetracted)
            #expect(try await store.recordedReferences(appID: app.id, among: ["c-1-race"]).isEmpty)
        }
    }

    @Test func theDeviceFeedListsARetractionBySelectorWithTheDevicesOwnReferences() async throws {
        try await TestDatabase.withStore { store, _ in
            let app = try await Fixture.registerApp(store)
            try await Self.conversation(store, app: app, thread: "c-1", messages: 2, devices: 0..<2)
            try await Self.conversation(store, app: app, thread: "c-2", messages: 1, devices: [0])
            try await store.record([
                Delivery(
                    appID: app.id, reference: "c-1-only-1", token: Fixture.token(1), sentAt: Date(), labels: DeliveryLabels(thread: "c-1"))
            ])
            let (retraction, _) = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "t"))
            let (byReference, _) = try await store.createRetraction(
                RetractionRequest(appID: app.id, target: .references(["c-2-m0"]), requestedBy: "t"))
            // The feed trails the oldest transaction still running, here or in a test beside this one.
            var zero = try await store.retractions(forDevice: Fixture.token(0), appID: app.id, limit: 10)
            let deadline = ContinuousClock.now + .seconds(30)
            while zero.retractions.count < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                zero = try await store.retractions(forDevice: Fixture.token(0), appID: app.id, limit: 10)
            }
            #expect(zero.retractions.map(\.id) == [retraction.id, byReference.id])
            #expect(zero.retractions.map(\.references) == [["c-1-m0", "c-1-m1"], ["c-2-m0"]])
            let one = try await store.retractions(forDevice: Fixture.token(1), appID: app.id, limit: 10)
            #expect(one.retractions.map(\.references) == [["c-1-m0", "c-1-m1", "c-1-only-1"]])
            #expect(try await store.retractions(forDevice: Fixture.token(9), appID: app.id, limit: 10).retractions.isEmpty)
        }
    }
}
