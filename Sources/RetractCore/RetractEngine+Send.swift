import Foundation
import NIOCore
import RetractKit
import RetractModel
import RetractStore

/// What `apns-collapse-id` an original gets.
package enum CollapseIDChoice: Sendable, Hashable {
    /// The reference (of an account, its ``AccountScope`` identifier): on the
    /// device, the notification's identifier is then the reference, and a
    /// retraction finds it even without custom data.
    case reference
    case custom(String)
    case none

    /// What makes `id` unfit for `apns-collapse-id`, or nil: APNs takes 1 to
    /// 64 bytes, and an HTTP header no control characters.
    package static func problem(with id: String) -> String? {
        Delivery.problem(withCollapseID: id)
    }
}

/// What sending an original to a list of devices came to.
package struct SendReport: Sendable, Hashable {
    /// The service the notification went through.
    package var service: PushService = .apns
    /// Devices APNs accepted the notification for.
    package var accepted = 0
    /// Deliveries written to the ledger that were not there before.
    package var recorded = 0
    /// Tokens the service said are dead, now marked so in the ledger.
    package var dead: [DeadToken] = []
    /// Devices not reached, by reason.
    package var failures: [String: Int] = [:]
    /// Set when the push service refused the app's credentials and sending stopped; the
    /// devices not tried are counted under this reason in ``failures``.
    package var stoppedBecause: String?
    /// Devices never sent the notification because it was retracted while
    /// it was being sent: they are neither recorded nor sent to.
    package var spared = 0

    package var failed: Int { failures.values.reduce(0, +) }

    /// What the failures suggest about the app's own settings, if anything.
    package var hints: [String] { ConfigurationHint.hints(failures: failures, attempted: accepted + dead.count + failed) }
}

/// How far a send got before it stopped on an error: what it had sent, so
/// that sending again sends only the rest (see
/// ``RetractEngine/send(app:reference:tokens:payload:collapseID:labels:via:androidDisplay:resuming:)``).
package struct SendProgress: Sendable, Hashable {
    /// The account of the devices sent to so far.
    package var report: SendReport
    /// The devices sent to (or given up on) so far.
    package var handled: Set<DeviceToken>

    package init(report: SendReport, handled: Set<DeviceToken>) {
        self.report = report
        self.handled = handled
    }
}

/// A ``SendReport`` as `retract send --json` and `POST /v1/notifications` print it.
package struct SendAccount: Encodable, Sendable {
    package var accepted: Int
    package var recorded: Int
    /// The tokens found dead: hex for APNs, registration tokens for FCM.
    package var dead: [String]
    package var failed: Int
    package var failures: [String: Int]
    package var stoppedBecause: String?
    package var hints: [String]?
    package var spared: Int

    package init(_ report: SendReport) {
        accepted = report.accepted
        spared = report.spared
        recorded = report.recorded
        dead = report.dead.map { report.service.text(of: $0.token) }
        failed = report.failed
        failures = report.failures
        stoppedBecause = report.stoppedBecause
        hints = report.hints.isEmpty ? nil : report.hints
    }
}

extension RetractEngine {
    /// Sends `payload` (a JSON object with `aps`) to `tokens` through `service`
    /// with `reference` written into its custom data, recording the deliveries
    /// in the ledger. Through FCM, the custom data travels in `data` as a
    /// JSON string (see docs/payload.md), and `androidDisplay` says whether
    /// Firebase shows a visible original on Android phones or the app does.
    ///
    /// Devices go in batches of ``EngineSettings/recordBatch``. A batch is
    /// recorded *before* it is sent, so a process killed while sending leaves
    /// no device that may show the notification out of the ledger; a device
    /// APNs then refused gets a harmless removal push if it is retracted.
    /// Every token given is sent to, a token the ledger knows dead too: the
    /// caller is sending to it now, so the app registered it again (if the
    /// service says it is dead still, it is marked so once more). Retryable
    /// answers are tried again here, after the engine's ``RetryPolicy``'s backoff.
    ///
    /// - Parameter resuming: what an earlier call with the same arguments
    ///   sent before it stopped on an error: those devices are not sent to
    ///   again, and the report adds up both calls.
    /// - Parameter account: the account it is of: its custom data names it,
    ///   its default collapse id and Android tag are the reference's
    ///   ``AccountScope`` identifier, its `aps.thread-id` the thread's, and
    ///   the ledger keeps it within the account (``LedgerScope``).
    /// - Throws: ``RetractError``; once anything was sent, it carries the
    ///   ``RetractError/partialSend`` to resume from.
    package func send(
        app: App,
        reference: ReferenceID,
        tokens: [DeviceToken],
        payload: Data,
        collapseID: CollapseIDChoice = .reference,
        labels: DeliveryLabels = DeliveryLabels(),
        via service: PushService = .apns,
        androidDisplay: AndroidDisplay = .firebase,
        account: String? = nil,
        resuming: SendProgress? = nil
    ) async throws(RetractError) -> SendReport {
        guard !tokens.isEmpty else { throw RetractError(.invalidInput, "tokens: at least one device token", field: "tokens") }
        try Self.check(account: account)
        if let (field, problem) = labels.problem { throw RetractError(.invalidInput, "\(field): \(problem)", field: field) }
        let built: Data
        do {
            built = try PayloadBuilder(dialect: app.dialect, account: account).originalPayload(
                payload, reference: reference, thread: labels.thread)
        } catch {
            throw RetractError(.invalidInput, "payload: \(error)", field: "payload")
        }
        let visible = try Self.isVisible(built)
        let body = ByteBuffer(bytes: built)
        let collapse: String?
        switch collapseID {
        case .reference: collapse = AccountScope.identifier(of: reference, account: account)
        case .custom(let id): collapse = id
        case .none: collapse = nil
        }
        if let collapse, let problem = CollapseIDChoice.problem(with: collapse) {
            // Without a collapse id of its own, the reference is the collapse id: it is what is at fault.
            throw RetractError(
                .invalidInput, "collapse id \"\(collapse.prefix(80).debugDescription.dropFirst().dropLast())\": \(problem)",
                field: collapseID == .reference ? "reference" : "collapseID")
        }
        let transport = try sender.transport(for: app, via: service)
        // Firebase shows it under its collapse id, else its reference: the tag RetractKit for Android looks for.
        let androidTag = androidDisplay == .firebase ? collapse ?? AccountScope.identifier(of: reference, account: account) : nil
        let kind = OutgoingPush.Kind.original(visible: visible, collapseID: collapse, androidTag: androidTag)
        // What the service would refuse is refused before anything is recorded.
        if let problem = transport.problem(with: body, kind: kind) {
            throw RetractError(.invalidInput, "payload: \(problem)", field: "payload")
        }

        var progress = resuming ?? SendProgress(report: SendReport(service: service), handled: [])
        // Tokens found dead by the call that stopped may not have been marked yet.
        try await marking(progress.report.dead, app: app, progress: progress)
        let unique = Array(Set(tokens).subtracting(progress.handled)).sorted()
        // One send time for every batch, the time the send began: a retraction by selector made while it
        // runs (whose range ends when it is made) takes the batches after it too, and spares their devices.
        let sentAt = Date()
        for start in stride(from: 0, to: unique.count, by: settings.recordBatch) {
            let batch = Array(unique[start..<min(start + settings.recordBatch, unique.count)])
            if let stopped = progress.report.stoppedBecause {
                progress.report.failures[stopped, default: 0] += batch.count
                progress.handled.formUnion(batch)
                continue
            }
            let recorded: RetractStore.Recorded
            do {
                // A silent original shows nothing for a retraction to take the place of.
                recorded = try await recordReporting(
                    [
                        recording(
                            app: app, reference: reference, tokens: batch, sentAt: sentAt, via: service,
                            collapseID: visible ? collapse : nil, labels: labels, account: account)
                    ],
                    ifRetracted: .refuse)
            } catch {
                throw error.stoppingSend(progress)
            }
            // Retracted before or while it was being sent: the rest are spared it, and nothing of them is recorded.
            if recorded.refusedAsRetracted {
                progress.report.spared = unique.count - start
                logger.info(
                    "original retracted before it was sent to every device; the rest are spared it",
                    metadata: ["app": "\(app.name)", "reference": "\(reference)", "spared": "\(progress.report.spared)"])
                break
            }
            progress.report.recorded += recorded.new
            let outcomes = await sendWithRetries(
                batch.map { OutgoingPush(token: $0, body: body, kind: kind) }, via: transport,
                pacing: sender.pacing(for: app, via: service))
            var dead: [DeadToken] = []
            for (token, outcome) in zip(batch, outcomes) {
                sender.metrics.count(1, .original, outcome: outcome)
                switch outcome {
                case .accepted: progress.report.accepted += 1
                case .tokenDead(let since, let reason): dead.append(DeadToken(token: token, since: since, reason: reason))
                case .failed(let reason), .retry(_, let reason), .unreachable(let reason): progress.report.failures[reason, default: 0] += 1
                case .authenticationFailed(let reason):
                    let stopped = "\(service) refused the app's credentials: \(reason)"
                    progress.report.stoppedBecause = stopped
                    progress.report.failures[stopped, default: 0] += 1
                }
            }
            progress.report.dead += dead
            progress.handled.formUnion(batch)
            try await marking(dead, app: app, progress: progress)
            // Recorded before it was sent: a retraction made meanwhile may have pushed the
            // removal before the original reached the service. Those devices get it again, after.
            let sent = zip(batch, outcomes).compactMap { token, outcome -> Delivery? in
                guard case .accepted = outcome else { return nil }
                return Delivery(
                    appID: app.id, reference: LedgerScope.reference(reference, account: account), token: token, sentAt: sentAt,
                    transport: service, collapseID: visible ? collapse : nil, labels: LedgerScope.labels(labels, account: account))
            }
            do {
                _ = try await store.retractSentWhileRetracted(sent)
            } catch {
                throw RetractError(error).stoppingSend(progress)
            }
        }
        let report = progress.report
        logger.info(
            "original sent",
            metadata: [
                "app": "\(app.name)", "reference": "\(reference)", "accepted": "\(report.accepted)", "dead": "\(report.dead.count)",
                "failed": "\(report.failed)",
            ])
        return report
    }

    /// Marks `dead` in the ledger; a failure carries `progress`.
    private func marking(_ dead: [DeadToken], app: App, progress: SendProgress) async throws(RetractError) {
        do {
            try await store.markDead(dead, appID: app.id)
        } catch {
            throw RetractError(error).stoppingSend(progress)
        }
    }

    /// The longest a device is tried again while a caller waits for
    /// ``send(app:reference:tokens:payload:collapseID:labels:via:androidDisplay:resuming:)``, from
    /// its first failed attempt (the retry budget, when shorter).
    static let longestWaitWhileSending: Duration = .seconds(60)

    /// Sends each push until it is accepted, dead, failed or refused, waiting
    /// out the retry policy's backoff between attempts (a service that cannot be
    /// reached is tried again every second) for at most the retry budget or
    /// ``longestWaitWhileSending``, whichever is shorter; at most the window in flight.
    func sendWithRetries(_ pushes: [OutgoingPush], via transport: any PushTransport, pacing: TransportPacing) async -> [PushOutcome] {
        transport.provision(inFlight: pacing.window.size)
        return await withTaskGroup(of: (Int, PushOutcome).self) { group in
            for (index, push) in pushes.enumerated() {
                group.addTask {
                    var attempt = 1
                    var failingSince: ContinuousClock.Instant?
                    while true {
                        await self.sender.acquire(pacing)
                        let outcome = await self.sender.send(push, via: transport, pacing: pacing, attempt: attempt)
                        self.sender.release(pacing)
                        let delay: Duration
                        switch outcome {
                        case .retry(let after, _): delay = after
                        case .unreachable: delay = .seconds(1)
                        default: return (index, outcome)
                        }
                        let since = failingSince ?? .now
                        failingSince = since
                        // The caller is waiting: a push the service holds back for long is reported, not waited for.
                        let budget = min(self.settings.retryBudget, Self.longestWaitWhileSending)
                        guard !Task.isCancelled, ContinuousClock.now + delay - since <= budget else {
                            return (index, .failed(reason: "\(Self.reason(of: outcome)) (still failing after \(Int(budget.inSeconds)) s)"))
                        }
                        try? await Task.sleep(for: delay)
                        if case .retry = outcome { attempt += 1 }
                    }
                }
            }
            var outcomes = [PushOutcome](repeating: .failed(reason: "not sent"), count: pushes.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes
        }
    }

    private static func reason(of outcome: PushOutcome) -> String {
        switch outcome {
        case .accepted: "accepted"
        case .tokenDead(_, let reason), .retry(_, let reason), .unreachable(let reason), .authenticationFailed(let reason),
            .failed(let reason):
            reason
        }
    }

    /// Whether an original shows something (alert, sound or badge) rather than
    /// only waking the app; that decides its push type.
    private static func isVisible(_ body: Data) throws(RetractError) -> Bool {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        else {
            throw RetractError(.invalidInput, "payload: it needs an \"aps\" object", field: "payload")
        }
        if ["alert", "sound", "badge"].contains(where: { aps[$0] != nil }) { return true }
        guard (aps["content-available"] as? NSNumber)?.intValue == 1 else {
            throw RetractError(
                .invalidInput, "payload: \"aps\" has neither alert, sound, badge nor content-available: 1; APNs would show nothing",
                field: "payload")
        }
        return false
    }
}

extension SendProgress: Codable {
    /// Kept as JSON with an idempotency key: tokens as the service writes
    /// them, times as seconds.
    private struct Stored: Codable {
        struct Dead: Codable {
            var token: String
            var since: Double
            var reason: String
            var learnedAt: Double
        }

        var service: PushService
        var accepted: Int
        var recorded: Int
        var dead: [Dead]
        var failures: [String: Int]
        var stoppedBecause: String?
        var handled: [String]
    }

    package init(from decoder: any Decoder) throws {
        let stored = try Stored(from: decoder)
        func token(_ text: String) throws -> DeviceToken {
            guard let token = stored.service.token(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "not a token: \(text.prefix(80))"))
            }
            return token
        }
        var report = SendReport(service: stored.service)
        report.accepted = stored.accepted
        report.recorded = stored.recorded
        report.dead = try stored.dead.map {
            DeadToken(
                token: try token($0.token), since: Date(timeIntervalSince1970: $0.since), reason: $0.reason,
                learnedAt: Date(timeIntervalSince1970: $0.learnedAt))
        }
        report.failures = stored.failures
        report.stoppedBecause = stored.stoppedBecause
        self.init(report: report, handled: Set(try stored.handled.map(token)))
    }

    package func encode(to encoder: any Encoder) throws {
        let service = report.service
        try Stored(
            service: service, accepted: report.accepted, recorded: report.recorded,
            dead: report.dead.map {
                Stored.Dead(
                    token: service.text(of: $0.token), since: $0.since.timeIntervalSince1970, reason: $0.reason,
                    learnedAt: $0.learnedAt.timeIntervalSince1970)
            },
            failures: report.failures, stoppedBecause: report.stoppedBecause, handled: handled.map { service.text(of: $0) }.sorted()
        ).encode(to: encoder)
    }
}
