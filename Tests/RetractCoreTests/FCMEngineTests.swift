import APNsSimulator
import FCMSimulator
import Foundation
import RetractAPNs
import RetractCore
import RetractFCM
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// The engine sending through FCM, and through APNs and FCM at once, against a real ledger and both simulators.
@Suite("Retraction engine over FCM")
struct FCMEngineTests {
    /// An engine on a fresh ledger, sending to both simulators, with small pages so a retraction takes several.
    static func withEngine(_ apns: SimulatedAPNs, _ fcm: SimulatedFCM, _ body: (RetractEngine) async throws -> Void) async throws {
        try await EngineTests.withEngine(
            apns, fcm: fcm,
            settings: EngineSettings(
                window: 200, pageSize: 25, lanes: 3, idlePoll: .milliseconds(50), retryPolicy: EngineTests.quickRetries), body)
    }

    static func mixedApp(_ apns: SimulatedAPNs, _ fcm: SimulatedFCM, name: String) -> AppRegistration {
        var registration = apns.registration(name: name)
        registration.fcmServiceAccountPath = fcm.serviceAccountPath
        return registration
    }

    @Test("a retraction to APNs and FCM devices reaches every live device once, each through its own service")
    func mixedPopulation() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                try await Self.withEngine(apns, fcm) { engine in
                    let app = try await engine.store.registerApp(Self.mixedApp(apns, fcm, name: "mixed"), actor: "tests")
                    let iPhones = TestTokens.tokens(0..<40)
                    let fcmDevices = SimulatedFCM.tokens(0..<40)
                    #expect(try await engine.record(app: app, reference: "msg-1", tokens: iPhones) == 40)
                    #expect(try await engine.record(app: app, reference: "msg-1", tokens: fcmDevices, via: .fcm) == 40)
                    // Three uninstalled through each service; two FCM devices answer with retryable errors first.
                    for token in iPhones.prefix(3) { apns.simulator.unregister(deviceToken: token.hex) }
                    for token in fcmDevices.prefix(3) { fcm.simulator.unregister(PushService.fcm.text(of: token)) }
                    fcm.simulator.script([.unavailable(retryAfter: nil), .internalError], for: PushService.fcm.text(of: fcmDevices[10]))
                    fcm.simulator.script([.quotaExceeded(retryAfter: 1)], for: PushService.fcm.text(of: fcmDevices[11]))

                    let status = try await EngineTests.retract(["msg-1"], app: app, engine: engine)
                    #expect(status.retraction.state == .done)
                    #expect(status.retraction.counts == RetractionCounts(total: 80, sent: 74, dead: 6))

                    for token in iPhones.dropFirst(3) {
                        let inbox = apns.inbox(token)
                        try #require(inbox.count == 1, "\(token) got \(inbox.count) APNs pushes")
                        #expect(RetractPayload.retraction(in: inbox[0].userInfo) == ["msg-1"])
                    }
                    for token in fcmDevices.dropFirst(3) {
                        let inbox = fcm.inbox(token)
                        try #require(inbox.count == 1, "\(token) got \(inbox.count) FCM messages")
                        #expect(inbox[0].apnsHeaders["apns-push-type"] == "background")
                        #expect(RetractPayload.retraction(in: inbox[0].userInfo) == ["msg-1"])
                    }
                    // No device got a push through the other service.
                    #expect(apns.simulator.statistics.accepted == 37)
                    #expect(fcm.simulator.statistics.messagesAccepted == 37)
                    #expect(
                        fcm.simulator.statistics.messagesRejected == [
                            "UNREGISTERED": 3, "UNAVAILABLE": 1, "INTERNAL": 1, "QUOTA_EXCEEDED": 1,
                        ])
                    for token in iPhones.prefix(3) + fcmDevices.prefix(3) {
                        #expect(try await engine.store.deadToken(token, appID: app.id) != nil)
                    }
                    // The ledger kept each delivery's service.
                    let page = try await engine.store.devicePage(appID: app.id, references: ["msg-1"], limit: 100)
                    #expect(Set(page.devices.filter { $0.transport == .fcm }.map(\.token)) == Set(fcmDevices.dropFirst(3)))
                    #expect(Set(page.devices.filter { $0.transport == .apns }.map(\.token)) == Set(iPhones.dropFirst(3)))
                }
            }
        }
    }

    @Test("a device with many references gets them all through FCM, in pushes that fit once written out")
    func manyReferencesThroughFCM() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                try await Self.withEngine(apns, fcm) { engine in
                    let app = try await engine.store.registerApp(Self.mixedApp(apns, fcm, name: "many"), actor: "tests")
                    let device = SimulatedFCM.token(1)
                    let references = (0..<150).map { ReferenceID(stringLiteral: "msg-\($0)-" + UUID().uuidString) }
                    for reference in references { _ = try await engine.record(app: app, reference: reference, tokens: [device], via: .fcm) }
                    let (retraction, _) = try await engine.startRetraction(app: app, target: .references(references), requestedBy: "tests")
                    try await RetractionWorker(engine: engine).finish([retraction.id])
                    let status = try await engine.status(of: retraction.id)
                    #expect(status.retraction.counts == RetractionCounts(total: 1, sent: 1), "\(status.failures)")
                    let inbox = fcm.inbox(device)
                    #expect(inbox.count > 1)
                    var retracted: Set<ReferenceID> = []
                    for message in inbox {
                        #expect(message.userInfoJSON.count <= 4096)
                        retracted.formUnion(RetractPayload.retraction(in: message.userInfo) ?? [])
                    }
                    #expect(retracted == Set(references))
                }
            }
        }
    }

    @Test("an original sent through FCM is recorded as FCM and retracted through FCM")
    func originalThroughFCM() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                try await Self.withEngine(apns, fcm) { engine in
                    var registration = Self.mixedApp(apns, fcm, name: "fcm-only")
                    registration.authentication = .fcmOnly
                    registration.endpoint = nil
                    let app = try await engine.store.registerApp(registration, actor: "tests")
                    let devices = SimulatedFCM.tokens(0..<5)
                    let payload = Data(#"{"aps":{"alert":{"title":"Sale","body":"50% off"}}}"#.utf8)
                    let report = try await engine.send(app: app, reference: "sale-1", tokens: devices, payload: payload, via: .fcm)
                    #expect(report.accepted == 5 && report.recorded == 5)
                    // An FCM-only app has no APNs credentials, and says so.
                    await #expect {
                        try await engine.send(app: app, reference: "sale-1", tokens: TestTokens.tokens(0..<1), payload: payload)
                    } throws: { error in
                        (error as? RetractError)?.code == .credentials && "\(error)".contains("FCM only")
                    }

                    // What FCM would refuse is refused before anything is recorded.
                    let reserved = Data(#"{"aps":{"alert":"x"},"from":"me"}"#.utf8)
                    await #expect {
                        try await engine.send(app: app, reference: "sale-2", tokens: devices, payload: reserved, via: .fcm)
                    } throws: { error in
                        (error as? RetractError)?.code == .invalidInput && "\(error)".contains("data key \"from\": reserved by FCM")
                    }
                    #expect(try await engine.store.recordedReferences(appID: app.id, among: ["sale-2"]).isEmpty)
                    // Devices the app cannot reach are not recorded either.
                    await #expect {
                        try await engine.record(app: app, reference: "sale-3", tokens: TestTokens.tokens(0..<1))
                    } throws: { error in
                        (error as? RetractError)?.code == .credentials && "\(error)".contains("it sends through FCM only")
                    }

                    let status = try await EngineTests.retract(["sale-1"], app: app, engine: engine)
                    #expect(status.retraction.counts == RetractionCounts(total: 5, sent: 5))
                    for token in devices {
                        let screen = await APNsSimulatedDevice.replay(fcm.inbox(token).map(\.asAPNsPush))
                        #expect(screen.showing.isEmpty)
                        #expect(screen.outcomes == [.removed(["sale-1"])])
                    }
                }
            }
        }
    }

    @Test("each FCM answer becomes the engine's outcome", arguments: 0..<9)
    func answersMapToOutcomes(index: Int) async throws {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maximumDelay: .seconds(1))
        let cases: [(FCMFault?, attempt: Int, check: @Sendable (PushOutcome) -> Bool)] = [
            (nil, 1, { $0 == .accepted }),
            (.unregistered, 1, { if case .tokenDead(_, let reason) = $0 { reason.contains("UNREGISTERED") } else { false } }),
            (
                .invalidArgument(field: "message.apns.payload"), 1,
                { if case .failed(let reason) = $0 { reason.contains("(message.apns.payload)") } else { false } }
            ),
            (.quotaExceeded(retryAfter: 7), 1, { if case .retry(let after, _) = $0 { after == .seconds(7) } else { false } }),
            (.unavailable(retryAfter: nil), 1, { if case .retry(let after, _) = $0 { after <= .milliseconds(100) } else { false } }),
            // The backoff grows with the attempt; how long to go on is the engine's retry budget.
            (.internalError, 3, { if case .retry(let after, _) = $0 { after <= .milliseconds(400) } else { false } }),
            (.thirdPartyAuthError, 1, { if case .authenticationFailed = $0 { true } else { false } }),
            // About one token (it belongs to another project), not the app's credentials: that device fails.
            (.senderIDMismatch, 1, { if case .failed(let reason) = $0 { reason.contains("SENDER_ID_MISMATCH") } else { false } }),
            // A Retry-After no service means is held to an hour.
            (
                .quotaExceeded(retryAfter: 1_000_000_000_000), 1,
                { if case .retry(let after, _) = $0 { after == .seconds(3600) } else { false } }
            ),
        ]
        let (fault, attempt, check) = cases[index]
        try await SimulatedFCM.with { fcm in
            let account = try FCMServiceAccount(contentsOfFile: fcm.serviceAccountPath)
            let client = try FCMClient(account: account, configuration: fcm.settings().clientConfiguration)
            let transport = FCMTransport(client: client)
            let token = SimulatedFCM.token(index)
            if let fault { fcm.simulator.script([fault], for: PushService.fcm.text(of: token)) }
            let body = try PayloadBuilder().retractionBodies(for: ["r"])[0]
            var random = SystemRandomNumberGenerator()
            let verdict = await transport.send(OutgoingPush(token: token, body: .init(bytes: body), kind: .retraction(.background)))
            let outcome = policy.outcome(of: verdict, attempt: attempt, using: &random)
            #expect(check(outcome), "\(String(describing: fault)) at attempt \(attempt) became \(outcome)")
            await transport.shutdown()
        }
    }
}
