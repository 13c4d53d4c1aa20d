import APNsSimulator
import Crypto
import FCMSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractTestSupport
import SimulatorSupport
import Testing

/// The worker against faults from outside, on the in-memory queue: a push
/// service that refuses one token, refuses a certificate, or a key file
/// rotated under it. The account is read as the engine reads it
/// (``RetractionStatus``: counts, failures and the hints they give). Faults
/// of the database itself stay in ``FaultTests``.
@Suite("The worker under faults from outside, on the in-memory queue")
struct WorkerFaultTests {
    /// Works a retraction of `references` to the end with one worker and reads its account.
    static func retract(
        _ references: [ReferenceID], app: App, queue: InMemoryWorkQueue, worker: RetractionWorker
    ) async throws
        -> RetractionStatus
    {
        let retraction = queue.createRetraction(RetractionRequest(appID: app.id, target: .references(references), requestedBy: "tests"))
        try await FaultTests.within(.seconds(60)) { try await worker.finish([retraction.id]) }
        let done = try #require(try await queue.retraction(id: retraction.id))
        return RetractionStatus(retraction: done, failures: queue.failures(of: retraction.id))
    }

    static func record(
        _ references: [ReferenceID], to tokens: [DeviceToken], via transport: PushService = .apns, app: App, in queue: InMemoryWorkQueue
    ) {
        queue.record(
            references.flatMap { reference in
                tokens.map { Delivery(appID: app.id, reference: reference, token: $0, sentAt: Date(), transport: transport) }
            })
    }

    @Test func aTokenOfAnotherFirebaseProjectFailsThatDeviceAndNotTheRetraction() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                let queue = InMemoryWorkQueue()
                let app = queue.register(FCMEngineTests.mixedApp(apns, fcm, name: "mixed"))
                let iPhones = TestTokens.tokens(0..<10)
                let androids = SimulatedFCM.tokens(0..<10)
                let foreign = PushService.fcm.text(of: androids[4])
                Self.record(["m1", "m2"], to: iPhones, app: app, in: queue)
                Self.record(["m1", "m2"], to: androids, via: .fcm, app: app, in: queue)
                fcm.simulator.script([.senderIDMismatch, .senderIDMismatch], for: foreign)

                var settings = WorkerTests.settings
                settings.pageSize = 25
                try await WorkerTests.withWorker(queue, apns, fcm: fcm, settings: settings) { worker in
                    // Retracting again meets the same token: it fails that device again, never the retraction.
                    for reference: ReferenceID in ["m1", "m2"] {
                        let status = try await Self.retract([reference], app: app, queue: queue, worker: worker)
                        FaultTests.expectSettled(status)
                        #expect(status.retraction.counts == RetractionCounts(total: 20, sent: 19, failed: 1))
                        #expect(status.failures.keys.map { $0.contains("SENDER_ID_MISMATCH") } == [true])
                    }
                }
                for token in iPhones { #expect(apns.inbox(token).count == 2) }
                for token in androids where token != androids[4] { #expect(fcm.inbox(token).count == 2) }
                #expect(fcm.inbox(androids[4]).isEmpty)
            }
        }
    }

    @Test func badDeviceTokenIsAFailureWithAHintNotADeath() async throws {
        let devices = TestTokens.tokens(0..<10)
        let faults = APNsSimulatorFaults(badDeviceTokens: Set(devices.prefix(8).map(\.hex)))
        try await SimulatedAPNs.with(faults: faults) { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "wrong-env"))
            Self.record(["a", "b"], to: devices, app: app, in: queue)
            try await WorkerTests.withWorker(queue, apns) { worker in
                for reference: ReferenceID in ["a", "b"] {
                    let status = try await Self.retract([reference], app: app, queue: queue, worker: worker)
                    FaultTests.expectSettled(status)
                    #expect(status.retraction.counts == RetractionCounts(total: 10, sent: 2, failed: 8))
                    #expect(status.failures == ["BadDeviceToken": 8])
                    #expect(status.hints.count == 1)
                    #expect(status.hints.first?.contains("8 of 10 devices were refused with BadDeviceToken: the app's environment") == true)
                }
            }
            // Not dead: the second retraction tried them again.
            #expect(try await queue.deadToken(devices[0], appID: app.id) == nil)
            #expect(apns.simulator.statistics.rejected == 16)
        }
    }

    @Test func aClientCertificateAPNsRefusesStopsTheRetraction() async throws {
        let trusted = try SimulatorCertificates.makeAuthority(name: "The authority APNs trusts")
        let other = try SimulatorCertificates.makeAuthority(name: "Someone else's authority")
        try await SimulatedAPNs.with(clientCertificateRootsPEM: [trusted.certificatePEM]) { apns in
            let certificate = try SimulatorCertificates.issueClientCertificate(commonName: "com.example.certified", from: other)
            let path = try apns.file("certified.pem", certificate.certificatePEM + "\n" + certificate.privateKeyPEM)
            let queue = InMemoryWorkQueue()
            let app = queue.register(
                AppRegistration(
                    name: "certified", topic: "com.example.certified", environment: .sandbox, endpoint: apns.endpoint,
                    authentication: .certificate(path: path)))
            Self.record(["r"], to: TestTokens.tokens(0..<5), app: app, in: queue)

            try await WorkerTests.withWorker(queue, apns) { worker in
                let status = try await Self.retract(["r"], app: app, queue: queue, worker: worker)
                #expect(status.retraction.state == .failed)
                #expect(
                    status.retraction.failure?.contains("APNs refused the client certificate") == true, "\(status.retraction.failure ?? "")"
                )
                // A stopped retraction leaves nothing queued.
                #expect(queue.queuedWorkCount(retractionID: status.retraction.id) == 0)
            }
            #expect(apns.simulator.statistics.accepted == 0)
        }
    }

    @Test func aKeyFileRotatedInPlaceIsReadAgain() async throws {
        try await SimulatedAPNs.with { apns in
            // The file holds a key APNs does not know (yet): every provider token is refused.
            let keyPath = try apns.file("AuthKey_rotated.p8", P256.Signing.PrivateKey().pemRepresentation)
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "rotated", keyPath: keyPath))
            let devices = TestTokens.tokens(0..<20)
            Self.record(["before", "after"], to: devices, app: app, in: queue)
            try await WorkerTests.withWorker(queue, apns, credentialCheckInterval: .zero) { worker in
                let before = try await Self.retract(["before"], app: app, queue: queue, worker: worker)
                #expect(before.retraction.state == .failed)

                // The operator puts the registered key in the same file.
                try Data(contentsOf: URL(fileURLWithPath: apns.keyPath)).write(to: URL(fileURLWithPath: keyPath))
                let after = try await Self.retract(["after"], app: app, queue: queue, worker: worker)
                FaultTests.expectSettled(after)
                #expect(after.retraction.counts == RetractionCounts(total: 20, sent: 20))
            }
        }
    }

    /// An app changed in what its retractions show (`PATCH /v1/apps`) keeps its
    /// connections: two retractions read before and after the change share
    /// them, where any change of where or how it sends makes new ones.
    @Test func aChangeOfRetractionSettingsKeepsTheAppsConnections() async throws {
        try await SimulatedAPNs.with { apns in
            let app = InMemoryWorkQueue().register(apns.registration(name: "kept"))
            try await WorkerTests.withTransports(apns) { transports in
                func same(_ a: any PushTransport, _ b: any PushTransport) -> Bool { (a as AnyObject) === (b as AnyObject) }
                let first = try transports.transport(for: app, via: .apns)
                var reworded = app
                reworded.retractionMode = .replace
                reworded.retractionText = "Withdrawn"
                reworded.approvalThreshold = 10
                #expect(same(try transports.transport(for: reworded, via: .apns), first))
                #expect(same(try transports.transport(for: app, via: .apns), first))
                var moved = app
                moved.endpoint = apns.endpoint + "/"
                #expect(!same(try transports.transport(for: moved, via: .apns), first))
            }
        }
    }

    @Test func aStormOf429And503EndsWithEveryDeviceReached() async throws {
        let faults = APNsSimulatorFaults(tooManyRequestsRate: 0.15, serviceUnavailableRate: 0.15, seed: 7)
        try await SimulatedAPNs.with(faults: faults) { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "storm"))
            let devices = TestTokens.tokens(0..<2000)
            Self.record(["storm"], to: devices, app: app, in: queue)
            try await WorkerTests.withWorker(queue, apns) { worker in
                let status = try await Self.retract(["storm"], app: app, queue: queue, worker: worker)
                #expect(status.retraction.state == .done)
                #expect(status.retraction.counts == RetractionCounts(total: 2000, sent: 2000))
                #expect(queue.queuedWorkCount(retractionID: status.retraction.id) == 0)
            }
            let statistics = apns.simulator.statistics
            // About 30% of first attempts were refused, and each was retried until accepted.
            #expect(statistics.rejected > 400)
            #expect(statistics.accepted == 2000)
            for device in devices {
                #expect(apns.inbox(device).count == 1, "device \(device)")
            }
        }
    }

    @Test func retriesThatOutlastTheBudgetAreCountedAsFailedWithTheirReason() async throws {
        // Every push is refused 503: once a device has failed for longer than the budget, it fails for good.
        // A budget of a second: time for a third attempt even when the machine is busy.
        let faults = APNsSimulatorFaults(serviceUnavailableRate: 1)
        try await SimulatedAPNs.with(faults: faults) { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "down"))
            Self.record(["r"], to: TestTokens.tokens(0..<20), app: app, in: queue)
            let settings = EngineSettings(
                window: 200, pageSize: 250, lanes: 3, idlePoll: .milliseconds(50), retryBudget: .seconds(1),
                retryPolicy: RetryPolicy(baseDelay: .milliseconds(20), maximumDelay: .milliseconds(50)))
            try await WorkerTests.withWorker(queue, apns, settings: settings) { worker in
                let started = ContinuousClock.now
                let status = try await Self.retract(["r"], app: app, queue: queue, worker: worker)
                #expect(ContinuousClock.now - started >= .seconds(1))
                #expect(status.retraction.state == .done)
                #expect(status.retraction.counts == RetractionCounts(total: 20, failed: 20))
                #expect(status.failures == ["no success within the 1 s retry budget: ServiceUnavailable": 20])
            }
            // Each device was tried more than once: the budget is time, not a number of attempts.
            #expect(apns.simulator.statistics.rejected > 40)
        }
    }

    @Test func refusedCredentialsStopTheRetractionWithTheReason() async throws {
        try await SimulatedAPNs.with { apns in
            // A key the simulator does not know: every provider token is refused.
            let otherKey = try apns.file("Other.p8", P256.Signing.PrivateKey().pemRepresentation)
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "revoked", keyPath: otherKey))
            Self.record(["r"], to: TestTokens.tokens(0..<50), app: app, in: queue)
            try await WorkerTests.withWorker(queue, apns) { worker in
                let status = try await Self.retract(["r"], app: app, queue: queue, worker: worker)
                #expect(status.retraction.state == .failed)
                #expect(status.retraction.failure?.contains("InvalidProviderToken") == true)
                #expect(queue.queuedWorkCount(retractionID: status.retraction.id) == 0)
            }
            #expect(apns.simulator.statistics.accepted == 0)
        }
    }

    @Test func fcmRefusingTheCredentialsStopsTheRetractionAndSaysWhy() async throws {
        try await SimulatedAPNs.with { apns in
            try await SimulatedFCM.with { fcm in
                let queue = InMemoryWorkQueue()
                let app = queue.register(FCMEngineTests.mixedApp(apns, fcm, name: "refused"))
                let device = SimulatedFCM.token(1)
                Self.record(["r"], to: [device], via: .fcm, app: app, in: queue)
                fcm.simulator.script([.thirdPartyAuthError], for: PushService.fcm.text(of: device))
                try await WorkerTests.withWorker(queue, apns, fcm: fcm) { worker in
                    let status = try await Self.retract(["r"], app: app, queue: queue, worker: worker)
                    #expect(status.retraction.state == .failed)
                    #expect(status.retraction.failure?.contains("FCM refused the app's credentials (FCM THIRD_PARTY_AUTH_ERROR") == true)
                }
            }
        }
    }

    @Test func aMissingKeyFileIsNamedBeforeAnythingIsSent() async throws {
        try await SimulatedAPNs.with { apns in
            let queue = InMemoryWorkQueue()
            let app = queue.register(apns.registration(name: "nokey", keyPath: apns.folder.appendingPathComponent("missing.p8").path))
            try await WorkerTests.withTransports(apns) { transports in
                let error = #expect(throws: RetractError.self) { try transports.transport(for: app, via: .apns) }
                #expect(error?.code == .credentials)
                #expect(error?.message.contains("missing.p8 cannot be read (no such file)") == true)
            }
        }
    }
}
