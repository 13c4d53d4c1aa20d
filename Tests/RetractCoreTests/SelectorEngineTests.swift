import APNsSimulator
import FCMSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import SimulatorSupport
import Testing

/// A conversation retracted whole, in each delivery mode and dialect, against
/// phones in the states real phones are in: what each phone shows at the end.
@Suite("Retraction by selector")
struct SelectorEngineTests {
    typealias Phone = APNsSimulatedDevice.Phone

    static let phones = DeliveryModeTests.phones
    static let deleted = DeliveryModeTests.deleted

    /// Sends messages 1 to 4 of conversation c-1 and message 5 of c-2 to one
    /// device per phone through Retract, retracts c-1 by thread in `mode`,
    /// and returns the account and what each phone shows (by identifier: text).
    func showing(after mode: RetractionMode, dialect: PayloadDialect) async throws -> (status: RetractionStatus, shown: [[String: String]])
    {
        var shown: [[String: String]] = []
        var account: RetractionStatus?
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat", dialect: dialect), actor: "tests")
                let devices = TestTokens.tokens(0..<Self.phones.count)
                for message in 1...5 {
                    let payload = Data(#"{"aps":{"alert":{"body":"message \#(message)"}}}"#.utf8)
                    let labels = DeliveryLabels(thread: message == 5 ? "c-2" : "c-1", sender: "ann")
                    let report = try await engine.send(
                        app: app, reference: ReferenceID("\(message)"), tokens: devices, payload: payload, labels: labels)
                    #expect(report.accepted == devices.count)
                }
                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "tests", mode: mode)
                #expect(retraction.counts.total == devices.count)
                #expect(retraction.referencesMatched == 4)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                let status = try await engine.status(of: retraction.id)
                #expect(status.retraction.counts == RetractionCounts(total: devices.count, sent: devices.count))
                account = status
                for (device, phone) in zip(devices, Self.phones) {
                    let inbox = apns.inbox(device)
                    let carriers = Array(inbox.dropFirst(5))
                    #expect(carriers.count == status.retraction.pushes.mostToOneDevice)
                    for carrier in carriers {
                        let reading = RetractPayload.read(carrier.userInfo)
                        if dialect == .canonical && mode != .replace {
                            // The conversation, not its messages: one push whatever its length.
                            #expect(reading.retractedThreads == ["c-1"])
                            #expect(reading.retraction == [])
                        } else {
                            #expect(reading.retractedThreads.isEmpty)
                            #expect(reading.retraction?.isSubset(of: ["1", "2", "3", "4"]) == true)
                        }
                    }
                    shown.append(await APNsSimulatedDevice.replay(inbox, on: phone).texts)
                }
            }
        }
        return (try #require(account), shown)
    }

    static let untouched = ["5": "message 5"]
    static let allShowing = ["1": "message 1", "2": "message 2", "3": "message 3", "4": "message 4", "5": "message 5"]
    static let eachReplaced = ["1": deleted, "2": deleted, "3": deleted, "4": deleted, "5": "message 5"]

    @Test(arguments: [PayloadDialect.canonical, .legacy])
    func inTheBackgroundTheConversationGoesFromEveryPhoneTheAppIsHandedPushesOn(dialect: PayloadDialect) async throws {
        let (status, shown) = try await showing(after: .background, dialect: dialect)
        #expect(shown[0] == Self.untouched)
        for texts in shown.dropFirst() { #expect(texts == Self.allShowing) }
        // Canonical: one push a device. Legacy: one a message, and the account warns of the burst.
        #expect(status.retraction.pushes.mostToOneDevice == (dialect == .canonical ? 1 : 4))
        #expect(status.retraction.pushes.total == Self.phones.count * (dialect == .canonical ? 1 : 4))
        let warned = (status.warnings + status.hints).contains { $0.contains("up to 4 pushes") }
        #expect(warned == (dialect == .legacy))
    }

    @Test(arguments: [PayloadDialect.canonical, .legacy])
    func aServiceExtensionCarrierTakesTheConversationFromForceQuitPhones(dialect: PayloadDialect) async throws {
        let (status, shown) = try await showing(after: .serviceExtension, dialect: dialect)
        switch dialect {
        case .canonical:
            // One carrier, in the first message's place: the extension removes the rest.
            let carrierShown = ["1": Self.deleted, "5": "message 5"]
            var withoutExtension = Self.allShowing
            withoutExtension["1"] = Self.deleted
            #expect(shown == [withoutExtension, carrierShown, Self.untouched, withoutExtension, carrierShown])
            #expect(status.retraction.pushes.mostToOneDevice == 1)
        case .legacy:
            // One carrier per message, each in its own original's place.
            #expect(shown == [Self.eachReplaced, Self.eachReplaced, Self.untouched, Self.eachReplaced, Self.eachReplaced])
            #expect(status.retraction.pushes.mostToOneDevice == 4)
        }
    }

    @Test(arguments: [PayloadDialect.canonical, .legacy])
    func replaceTakesEachMessagesPlaceOnEveryPhone(dialect: PayloadDialect) async throws {
        let (status, shown) = try await showing(after: .replace, dialect: dialect)
        for texts in shown { #expect(texts == Self.eachReplaced) }
        #expect(status.retraction.pushes.mostToOneDevice == 4)
    }

    /// A sender's messages past what one push can carry: split across as
    /// few pushes as fit, and the account says how many one device needed.
    @Test func aSendersManyMessagesAreSplitAcrossAsFewPushesAsFit() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let device = TestTokens.token(0)
                let other = TestTokens.token(1)
                // 300 references of 40 bytes: about 13 KB of references, four bodies of 4 KB.
                let references = (0..<300).map { ReferenceID("spam-message-\(String(format: "%027d", $0))") }
                var deliveries = references.map {
                    Delivery(appID: app.id, reference: $0, token: device, sentAt: Date(), labels: DeliveryLabels(sender: "spammer"))
                }
                deliveries.append(
                    Delivery(
                        appID: app.id, reference: references[0], token: other, sentAt: Date(), labels: DeliveryLabels(sender: "spammer")))
                try await engine.store.record(deliveries)
                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .selector(RetractionSelector(.sender, "spammer")), requestedBy: "tests")
                #expect(retraction.referencesMatched == 300)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                let status = try await engine.status(of: retraction.id)
                #expect(status.retraction.counts == RetractionCounts(total: 2, sent: 2))
                #expect(status.retraction.pushes == PushesSent(total: 5, mostToOneDevice: 4))
                let inbox = apns.inbox(device)
                #expect(inbox.count == 4)
                #expect(inbox.allSatisfy { $0.body.count <= 4096 })
                #expect(Set(inbox.flatMap { RetractPayload.retraction(in: $0.userInfo) ?? [] }) == Set(references))
                #expect(status.hints.contains { $0.contains("up to 4 pushes") })
                // Each of the four says the rest is in the device feed; the other device's one push carries it all.
                #expect(inbox.allSatisfy { RetractPayload.read($0.userInfo).customData?.moreInFeed == true })
                #expect(apns.inbox(other).map { RetractPayload.read($0.userInfo).customData?.moreInFeed } == [false])
            }
        }
    }

    /// A conversation retracted from a time on takes only its later
    /// messages: its push names them, since the thread id would take the
    /// earlier ones from the phone too.
    @Test func aConversationRetractedFromATimeOnCarriesItsMessagesNotTheThread() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let device = TestTokens.token(0)
                let hourAgo = Date().addingTimeInterval(-3600)
                try await engine.store.record(
                    [("1", hourAgo), ("2", hourAgo), ("3", Date())].map { reference, sentAt in
                        Delivery(appID: app.id, reference: ReferenceID(reference), token: device, sentAt: sentAt, labels: DeliveryLabels(thread: "c-1"))
                    })
                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .selector(RetractionSelector(.thread, "c-1", sentAfter: hourAgo.addingTimeInterval(60))),
                    requestedBy: "tests")
                #expect(retraction.referencesMatched == 1)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                let reading = RetractPayload.read(try #require(apns.inbox(device).last).userInfo)
                #expect(reading.retraction == ["3"])
                #expect(reading.retractedThreads.isEmpty)
                // On the phone, the conversation's first two messages stay.
                let originals = ["1", "2", "3"].map { reference in
                    APNsReceivedPush(
                        apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": reference],
                        body: Data(#"{"aps":{"alert":"message \#(reference)","thread-id":"c-1"}}"#.utf8), receivedAt: hourAgo)
                }
                let screen = await APNsSimulatedDevice.replay(originals + apns.inbox(device))
                #expect(screen.showing.map(\.identifier) == ["1", "2"])
            }
        }
    }

    /// A conversation on iPhones and Android phones at once: each gets the
    /// thread through its own service, FCM's in its data (as JSON text).
    @Test func aConversationOnIPhonesAndAndroidPhonesGoesThroughEachService() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                try await FCMEngineTests.withEngine(apns, fcm) { engine in
                    let app = try await engine.store.registerApp(FCMEngineTests.mixedApp(apns, fcm, name: "chat"), actor: "tests")
                    let iPhones = TestTokens.tokens(0..<30)
                    let androids = SimulatedFCM.tokens(0..<30)
                    for message in 1...3 {
                        let labels = DeliveryLabels(thread: "c-1")
                        _ = try await engine.record(app: app, reference: ReferenceID("m\(message)"), tokens: iPhones, labels: labels)
                        _ = try await engine.record(
                            app: app, reference: ReferenceID("m\(message)"), tokens: androids, via: .fcm, labels: labels)
                    }
                    _ = try await engine.record(app: app, reference: "other", tokens: iPhones, labels: DeliveryLabels(thread: "c-2"))
                    let (retraction, _) = try await engine.startRetraction(
                        app: app, target: .selector(RetractionSelector(.thread, "c-1")), requestedBy: "tests")
                    try await RetractionWorker(engine: engine).finish([retraction.id])
                    let status = try await engine.status(of: retraction.id)
                    #expect(status.retraction.counts == RetractionCounts(total: 60, sent: 60))
                    #expect(status.retraction.pushes == PushesSent(total: 60, mostToOneDevice: 1))
                    for token in iPhones {
                        let inbox = apns.inbox(token)
                        try #require(inbox.count == 1)
                        #expect(RetractPayload.read(inbox[0].userInfo).retractedThreads == ["c-1"])
                    }
                    for token in androids {
                        let inbox = fcm.inbox(token)
                        try #require(inbox.count == 1)
                        #expect(RetractPayload.read(inbox[0].userInfo).retractedThreads == ["c-1"])
                    }
                }
            }
        }
    }
}
