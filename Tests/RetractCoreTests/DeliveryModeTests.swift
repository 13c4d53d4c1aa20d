import APNsSimulator
import FCMSimulator
import Foundation
import RetractCore
import RetractFCM
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Each delivery mode against phones in the states real phones are in,
/// through a real ledger and the simulators: what each phone shows at the end.
@Suite("Delivery modes")
struct DeliveryModeTests {
    typealias Phone = APNsSimulatedDevice.Phone

    /// The phones of every test: the app in the background without an
    /// extension, force-quit with an extension (with and without the
    /// filtering entitlement), over its background budget, in Low Power Mode.
    static let phones: [Phone] = [
        Phone(),
        Phone(appState: .forceQuit, serviceExtension: .unfiltered),
        Phone(appState: .forceQuit, serviceExtension: .filtering),
        Phone(backgroundBudget: 0),
        Phone(appState: .lowPower, serviceExtension: .unfiltered),
    ]

    static let payload = Data(#"{"aps":{"alert":{"title":"Ada","body":"See you at 8?"},"mutable-content":1}}"#.utf8)

    /// Sends m1 and m2 to one device per phone through Retract, retracts m1
    /// in `mode`, and returns what each phone shows (by identifier: text).
    func showing(after mode: RetractionMode, dialect: PayloadDialect = .canonical) async throws -> [[String: String]] {
        var shown: [[String: String]] = []
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat", dialect: dialect), actor: "tests")
                let devices = TestTokens.tokens(0..<Self.phones.count)
                for reference: ReferenceID in [1, 2] {
                    let report = try await engine.send(app: app, reference: reference, tokens: devices, payload: Self.payload)
                    #expect(report.accepted == devices.count)
                }
                let (retraction, _) = try await engine.startRetraction(app: app, target: .references([1]), requestedBy: "tests", mode: mode)
                #expect(retraction.mode == mode)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                let status = try await engine.status(of: retraction.id)
                #expect(status.retraction.counts == RetractionCounts(total: devices.count, sent: devices.count))
                for (device, phone) in zip(devices, Self.phones) {
                    let inbox = apns.inbox(device)
                    try #require(inbox.count == 3)
                    let carrier = inbox[2]
                    switch mode {
                    case .background:
                        #expect(carrier.pushType == "background")
                        #expect(carrier.headers["apns-priority"] == "5")
                    case .serviceExtension, .replace:
                        #expect(carrier.pushType == "alert")
                        #expect(carrier.headers["apns-priority"] == "10")
                        // In the original's place, should nothing else act on it.
                        #expect(carrier.collapseID == "1")
                        let aps = carrier.userInfo["aps"] as? [String: Any]
                        #expect((aps?["alert"] as? [String: Any])?["body"] as? String == "This message was deleted")
                        #expect((aps?["mutable-content"] as? Int == 1) == (mode == .serviceExtension))
                    }
                    #expect(RetractPayload.retraction(in: carrier.userInfo) == [1])
                    shown.append(await APNsSimulatedDevice.replay(inbox, on: phone).texts)
                }
            }
        }
        return shown
    }

    static let original = "See you at 8?"
    static let deleted = "This message was deleted"

    @Test func aBackgroundPushReachesOnlyAnAppIOSHandsItTo() async throws {
        let shown = try await showing(after: .background)
        #expect(shown[0] == ["2": Self.original])
        // Force-quit, over budget, Low Power Mode: the deleted message stays.
        for texts in shown.dropFirst() { #expect(texts == ["1": Self.original, "2": Self.original]) }
    }

    @Test(arguments: [PayloadDialect.canonical, .legacy])
    func aServiceExtensionCarrierReachesForceQuitAndThrottledPhones(dialect: PayloadDialect) async throws {
        let shown = try await showing(after: .serviceExtension, dialect: dialect)
        // No extension: the carrier, shown as sent, takes the original's place.
        #expect(shown[0] == ["1": Self.deleted, "2": Self.original])
        // An extension without the filtering entitlement removes the original and shows the carrier.
        #expect(shown[1] == ["1": Self.deleted, "2": Self.original])
        // With it, nothing is left of the deleted message.
        #expect(shown[2] == ["2": Self.original])
        #expect(shown[3] == ["1": Self.deleted, "2": Self.original])
        #expect(shown[4] == ["1": Self.deleted, "2": Self.original])
    }

    @Test func aReplacementTakesTheOriginalsPlaceOnEveryPhone() async throws {
        let shown = try await showing(after: .replace)
        for texts in shown { #expect(texts == ["1": Self.deleted, "2": Self.original]) }
    }

    @Test func replaceCountsDevicesWithoutACollapseIDUnderTheirOwnReason() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let devices = TestTokens.tokens(0..<5)
                _ = try await engine.record(app: app, reference: "m1", tokens: Array(devices[0..<3]), collapseID: "thread-7")
                _ = try await engine.record(app: app, reference: "m1", tokens: Array(devices[3...]))
                _ = try await engine.record(app: app, reference: "m2", tokens: devices)

                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .references(["m1"]), requestedBy: "tests", mode: .replace, badge: 4)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                let status = try await engine.status(of: retraction.id)
                #expect(status.retraction.counts == RetractionCounts(total: 5, sent: 3, failed: 2))
                #expect(status.failures == [RetractionPushes.noCollapseID: 2])
                for device in devices[0..<3] {
                    let inbox = apns.inbox(device)
                    try #require(inbox.count == 1)
                    #expect(inbox[0].collapseID == "thread-7")
                    #expect((inbox[0].userInfo["aps"] as? [String: Any])?["badge"] as? Int == 4)
                }
                for device in devices[3...] { #expect(apns.inbox(device).isEmpty) }

                // With no collapse id at all, there is nothing to replace: refused, nothing written.
                await #expect {
                    try await engine.startRetraction(app: app, target: .references(["m2"]), requestedBy: "tests", mode: .replace)
                } throws: { error in
                    let error = error as? RetractError
                    return error?.code == .invalidInput && error?.field == "mode" && "\(error!)".contains("collapse id")
                }
                #expect(try await engine.store.auditLog(appID: app.id).filter { $0.action == "retraction.created" }.count == 1)
            }
        }
    }

    /// An app that sends a conversation's messages under one collapse id (so
    /// the newest replaces the last): an alert under that collapse id for an
    /// older message would hide the newest. Never sent: `replace` leaves such
    /// devices out (they show the older message no longer), `service-extension`
    /// sends their carrier under no collapse id.
    @Test(arguments: [RetractionMode.replace, .serviceExtension])
    func aSharedCollapseIDNeverHidesTheNewerMessage(mode: RetractionMode) async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let devices = TestTokens.tokens(0..<3)
                let phone = Phone(appState: .forceQuit, serviceExtension: mode == .replace ? .none : .unfiltered)
                func text(_ body: String) -> Data { Data(#"{"aps":{"alert":{"body":"\#(body)"}}}"#.utf8) }
                // Every device gets m1; all but the last then get m2 in its place.
                _ = try await engine.send(
                    app: app, reference: "m1", tokens: devices, payload: text("First"), collapseID: .custom("chat-42"))
                _ = try await engine.send(
                    app: app, reference: "m2", tokens: Array(devices.prefix(2)), payload: text("Second"), collapseID: .custom("chat-42"))

                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .references(["m1"]), requestedBy: "tests", mode: mode)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                let status = try await engine.status(of: retraction.id)
                switch mode {
                case .replace:
                    #expect(status.retraction.counts == RetractionCounts(total: 3, sent: 1, failed: 2))
                    #expect(status.failures == [RetractionPushes.superseded: 2])
                    for device in devices.prefix(2) { #expect(apns.inbox(device).count == 2) }
                default:
                    #expect(status.retraction.counts == RetractionCounts(total: 3, sent: 3))
                    for device in devices.prefix(2) {
                        let carrier = try #require(apns.inbox(device).last)
                        #expect(carrier.collapseID == nil)
                        #expect(RetractPayload.retraction(in: carrier.userInfo) == ["m1"])
                    }
                }
                // The newer message stays where it was; the last device's m1 is gone.
                for device in devices.prefix(2) {
                    let screen = await APNsSimulatedDevice.replay(apns.inbox(device), on: phone)
                    #expect(screen.texts["chat-42"] == "Second")
                    #expect(!screen.texts.values.contains("First"))
                }
                let last = await APNsSimulatedDevice.replay(apns.inbox(devices[2]), on: phone)
                #expect(last.texts == ["chat-42": Self.deleted])

                // m2 itself, retracted later: nothing newer under its collapse id, so its place is taken.
                let (second, _) = try await engine.startRetraction(app: app, target: .references(["m2"]), requestedBy: "tests", mode: mode)
                try await RetractionWorker(engine: engine).finish([second.id])
                #expect(try await engine.status(of: second.id).retraction.counts == RetractionCounts(total: 2, sent: 2))
                for device in devices.prefix(2) {
                    #expect(apns.inbox(device).last?.collapseID == "chat-42")
                    let screen = await APNsSimulatedDevice.replay(apns.inbox(device), on: phone)
                    #expect(screen.texts["chat-42"] == Self.deleted)
                    #expect(!screen.texts.values.contains("First") && !screen.texts.values.contains("Second"))
                }
            }
        }
    }

    @Test func eachLegacyCarrierTakesThePlaceOfItsOwnOriginal() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat", dialect: .legacy), actor: "tests")
                let device = TestTokens.token(0)
                for reference: ReferenceID in [7, 8, 9] {
                    _ = try await engine.send(app: app, reference: reference, tokens: [device], payload: DeliveryModeTests.payload)
                }
                let (retraction, _) = try await engine.startRetraction(
                    app: app, target: .references([7, 8]), requestedBy: "tests", mode: .serviceExtension)
                try await RetractionWorker(engine: engine).finish([retraction.id])
                // The legacy dialect carries one reference per push: one carrier each, each with its own original's collapse id.
                let carriers = apns.inbox(device).dropFirst(3)
                #expect(
                    carriers.map { RetractPayload.retraction(in: $0.userInfo) }.compactMap { $0 }.sorted { $0.first! < $1.first! } == [
                        [7], [8],
                    ])
                for carrier in carriers {
                    #expect(RetractPayload.retraction(in: carrier.userInfo) == [ReferenceID(carrier.collapseID ?? "")])
                }
                // A phone without an extension: each carrier in its original's place, 9 untouched.
                let screen = await APNsSimulatedDevice.replay(apns.inbox(device))
                #expect(screen.texts == ["7": DeliveryModeTests.deleted, "8": DeliveryModeTests.deleted, "9": DeliveryModeTests.original])
            }
        }
    }

    @Test func aBadgeIsRefusedOnABackgroundPush() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                _ = try await engine.record(app: app, reference: "m1", tokens: TestTokens.tokens(0..<1))
                for badge in [-1, 2] {
                    await #expect {
                        try await engine.startRetraction(app: app, target: .references(["m1"]), requestedBy: "tests", badge: badge)
                    } throws: { error in
                        (error as? RetractError)?.field == "badge"
                    }
                }
                #expect(try await engine.store.auditLog(appID: app.id).filter { $0.action == "retraction.created" }.isEmpty)
            }
        }
    }

    @Test func anAppsDefaultModeAndTextAreUsedUnlessARetractionSaysOtherwise() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                var registration = apns.registration(name: "chat")
                registration.retractionMode = .serviceExtension
                registration.retractionText = "Nachricht gelöscht"
                let app = try await engine.store.registerApp(registration, actor: "tests")
                #expect(try await engine.store.app(named: "chat")?.retractionMode == .serviceExtension)
                let device = TestTokens.token(0)
                _ = try await engine.record(app: app, reference: "m1", tokens: [device])
                let byDefault = try await engine.startRetraction(app: app, target: .references(["m1"]), requestedBy: "tests").retraction
                let chosen = try await engine.startRetraction(
                    app: app, target: .references(["m1"]), requestedBy: "tests", mode: .background
                )
                .retraction
                try await RetractionWorker(engine: engine).finish([byDefault.id, chosen.id])
                #expect((byDefault.mode, chosen.mode) == (.serviceExtension, .background))
                let pushTypes = apns.inbox(device).map(\.pushType)
                #expect(pushTypes.sorted { ($0 ?? "") < ($1 ?? "") } == ["alert", "background"])
                let carrier = try #require(apns.inbox(device).first { $0.pushType == "alert" })
                #expect(
                    ((carrier.userInfo["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String == "Nachricht gelöscht")
                // A text no push could carry, or with control characters, is refused when the app is registered.
                registration.name = "long"
                for text in [String(repeating: "x", count: 1025), "Deleted\u{7}"] {
                    registration.retractionText = text
                    await #expect {
                        try await engine.registerApp(registration, actor: "tests")
                    } throws: { error in
                        (error as? RetractError)?.field == "retractionText"
                    }
                }
                #expect(RetractionMode.smallestBodyLimit == FCMMessage.bodyLimit)
            }
        }
    }
}

@Suite("Delivery modes over FCM")
struct FCMDeliveryModeTests {
    @Test(arguments: [RetractionMode.serviceExtension, .replace])
    func anAlertModeReachesAndroidAndIPhonesThroughFCM(mode: RetractionMode) async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                try await FCMEngineTests.withEngine(apns, fcm) { engine in
                    let app = try await engine.store.registerApp(FCMEngineTests.mixedApp(apns, fcm, name: "mixed"), actor: "tests")
                    let devices = SimulatedFCM.tokens(0..<3)
                    let payload = Data(#"{"aps":{"alert":{"title":"Ada","body":"See you at 8?"}}}"#.utf8)
                    _ = try await engine.send(app: app, reference: "m1", tokens: devices, payload: payload, via: .fcm)
                    let (retraction, _) = try await engine.startRetraction(
                        app: app, target: .references(["m1"]), requestedBy: "tests", mode: mode)
                    try await RetractionWorker(engine: engine).finish([retraction.id])
                    #expect(try await engine.status(of: retraction.id).retraction.counts == RetractionCounts(total: 3, sent: 3))
                    for device in devices {
                        let inbox = fcm.inbox(device)
                        try #require(inbox.count == 2)
                        let (original, carrier) = (inbox[0], inbox[1])
                        // An original sent through Retract is tagged with its collapse id on Android.
                        #expect(original.androidNotification?["tag"] == "m1")
                        #expect(carrier.apnsHeaders["apns-push-type"] == "alert")
                        #expect(carrier.apnsHeaders["apns-priority"] == "10")
                        #expect(carrier.apnsHeaders["apns-collapse-id"] == "m1")
                        #expect(RetractPayload.retraction(in: carrier.userInfo) == ["m1"])
                        switch mode {
                        case .replace:
                            // Android shows the text in the original's place: the same tag.
                            #expect(carrier.androidNotification == ["body": "This message was deleted", "tag": "m1"])
                        default:
                            // A data message, which the Android app handles as it handles background retractions.
                            #expect(carrier.androidNotification == nil)
                        }
                        let screen = await APNsSimulatedDevice.replay(
                            inbox.map(\.asAPNsPush), on: .init(appState: .forceQuit, serviceExtension: .filtering))
                        #expect(screen.texts == (mode == .replace ? ["m1": "This message was deleted"] : [:]))
                    }
                }
            }
        }
    }
}
