import Foundation
import NIOCore
import RetractFCM
import RetractKit
import RetractStore

/// What `apns-collapse-id` an original gets.
public enum CollapseIDChoice: Sendable, Hashable {
    /// The reference: on the device, the notification's identifier is then the
    /// reference, and a retraction finds it even without custom data.
    case reference
    case custom(String)
    case none

    /// What makes `id` unfit for `apns-collapse-id`, or nil: APNs takes 1 to
    /// 64 bytes, and an HTTP header no control characters.
    public static func problem(with id: String) -> String? {
        if id.isEmpty || id.utf8.count > 64 { return "\(id.utf8.count) bytes; APNs takes 1 to 64" }
        if id.containsControlCharacters { return "control characters cannot go in an HTTP header" }
        return nil
    }
}

/// What sending an original to a list of devices came to.
public struct SendReport: Sendable, Hashable {
    /// The service the notification went through.
    public var service: PushService = .apns
    /// Devices APNs accepted the notification for.
    public var accepted = 0
    /// Deliveries written to the ledger that were not there before.
    public var recorded = 0
    /// Tokens APNs said are dead, now marked so in the ledger.
    public var dead: [DeadToken] = []
    /// Tokens skipped because the ledger already knew them dead.
    public var skippedDead = 0
    /// Devices not reached, by reason.
    public var failures: [String: Int] = [:]
    /// Set when the push service refused the app's credentials and sending stopped; the
    /// devices not tried are counted under this reason in ``failures``.
    public var stoppedBecause: String?

    public var failed: Int { failures.values.reduce(0, +) }
}

/// A ``SendReport`` as `retract send --json` and `POST /v1/notifications` print it.
public struct SendAccount: Encodable, Sendable {
    public var accepted: Int
    public var recorded: Int
    /// The tokens found dead: hex for APNs, registration tokens for FCM.
    public var dead: [String]
    public var skippedDead: Int
    public var failed: Int
    public var failures: [String: Int]
    public var stoppedBecause: String?

    public init(_ report: SendReport) {
        accepted = report.accepted
        recorded = report.recorded
        dead = report.dead.map { report.service.text(of: $0.token) }
        skippedDead = report.skippedDead
        failed = report.failed
        failures = report.failures
        stoppedBecause = report.stoppedBecause
    }
}

extension RetractEngine {
    /// Sends `payload` (a JSON object with `aps`) to `tokens` through `service`
    /// with `reference` written into its custom data, recording the deliveries
    /// in the ledger. Through FCM, the custom data travels in `data` as a
    /// JSON string (see ``FCMMessage``).
    ///
    /// Devices go in batches of ``EngineSettings/recordBatch``. A batch is
    /// recorded *before* it is sent, so a process killed while sending leaves
    /// no device that may show the notification out of the ledger; a device
    /// APNs then refused gets a harmless removal push if it is retracted.
    /// Tokens the ledger knows dead are skipped. Retryable answers are tried
    /// again here, with the transport's backoff.
    public func send(
        app: App,
        reference: ReferenceID,
        tokens: [DeviceToken],
        payload: Data,
        collapseID: CollapseIDChoice = .reference,
        via service: PushService = .apns
    ) async throws(RetractError) -> SendReport {
        if let problem = Delivery.problem(with: reference) { throw RetractError(.invalidInput, "reference \"\(reference)\": \(problem)") }
        guard !tokens.isEmpty else { throw RetractError(.invalidInput, "tokens: at least one device token") }
        let built: Data
        do {
            built = try PayloadBuilder(dialect: app.dialect).originalPayload(payload, reference: reference)
        } catch {
            throw RetractError(.invalidInput, "payload: \(error)")
        }
        let visible = try Self.isVisible(built)
        let body = ByteBuffer(bytes: built)
        let collapse: String?
        switch collapseID {
        case .reference: collapse = reference.rawValue
        case .custom(let id): collapse = id
        case .none: collapse = nil
        }
        if let collapse, let problem = CollapseIDChoice.problem(with: collapse) {
            throw RetractError(.invalidInput, "collapse id \"\(collapse.prefix(80).debugDescription.dropFirst().dropLast())\": \(problem)")
        }
        if service == .fcm {
            // What FCM would refuse (a reserved data key, a payload too large once written out) is refused before anything is recorded.
            do {
                _ = try FCMMessage(body: built, kind: visible ? .alert : .background, collapseID: collapse)
            } catch {
                throw RetractError(.invalidInput, "payload: \(error.message)")
            }
        }
        let transport = try transports.transport(for: app, via: service)
        let kind = OutgoingPush.Kind.original(visible: visible, collapseID: collapse)

        var report = SendReport(service: service)
        let unique = Array(Set(tokens)).sorted()
        for start in stride(from: 0, to: unique.count, by: settings.recordBatch) {
            let batch = Array(unique[start..<min(start + settings.recordBatch, unique.count)])
            if let stopped = report.stoppedBecause {
                report.failures[stopped, default: 0] += batch.count
                continue
            }
            let known = try await RetractError.store { () async throws(StoreError) in
                try await store.deadTokens(appID: app.id, among: batch)
            }
            let live = batch.filter { !known.contains($0) }
            report.skippedDead += batch.count - live.count
            report.recorded += try await record(app: app, reference: reference, tokens: live, via: service)
            let outcomes = await sendWithRetries(live.map { OutgoingPush(token: $0, body: body, kind: kind) }, via: transport)
            var dead: [DeadToken] = []
            for (token, outcome) in zip(live, outcomes) {
                metrics.count(1, .original, outcome: outcome)
                switch outcome {
                case .accepted: report.accepted += 1
                case .tokenDead(let since, let reason): dead.append(DeadToken(token: token, since: since, reason: reason))
                case .failed(let reason), .retry(_, let reason): report.failures[reason, default: 0] += 1
                case .authenticationFailed(let reason):
                    report.stoppedBecause = "\(service) refused the app's credentials: \(reason)"
                    report.failures[report.stoppedBecause!, default: 0] += 1
                }
            }
            try await RetractError.store { () async throws(StoreError) in try await store.markDead(dead, appID: app.id) }
            report.dead += dead
        }
        logger.info(
            "original sent",
            metadata: [
                "app": "\(app.name)", "reference": "\(reference)", "accepted": "\(report.accepted)", "dead": "\(report.dead.count)",
                "failed": "\(report.failed)",
            ])
        return report
    }

    /// The longest wait before another attempt while a caller waits for ``send(app:reference:tokens:payload:collapseID:via:)``.
    static let longestWaitWhileSending: Duration = .seconds(60)

    /// Sends each push until it is accepted, dead, failed or refused, waiting
    /// out the transport's backoff between attempts; at most ``window`` in flight.
    func sendWithRetries(_ pushes: [OutgoingPush], via transport: any PushTransport) async -> [PushOutcome] {
        await withTaskGroup(of: (Int, PushOutcome).self) { group in
            for (index, push) in pushes.enumerated() {
                group.addTask {
                    var attempt = 1
                    while true {
                        await self.window.acquire()
                        let outcome = await transport.send(push, attempt: attempt)
                        self.window.release()
                        guard case .retry(let delay, let reason) = outcome, !Task.isCancelled else { return (index, outcome) }
                        // The caller is waiting: a push the service wants held back for long is reported, not waited for.
                        guard delay <= Self.longestWaitWhileSending else {
                            return (index, .failed(reason: "\(reason) (asked to wait \(Int(delay.inSeconds)) s)"))
                        }
                        try? await Task.sleep(for: delay)
                        attempt += 1
                    }
                }
            }
            var outcomes = [PushOutcome](repeating: .failed(reason: "not sent"), count: pushes.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes
        }
    }

    /// Whether an original shows something (alert, sound or badge) rather than
    /// only waking the app; that decides its push type.
    private static func isVisible(_ body: Data) throws(RetractError) -> Bool {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        else {
            throw RetractError(.invalidInput, "payload: it needs an \"aps\" object")
        }
        if ["alert", "sound", "badge"].contains(where: { aps[$0] != nil }) { return true }
        guard (aps["content-available"] as? NSNumber)?.intValue == 1 else {
            throw RetractError(
                .invalidInput, "payload: \"aps\" has neither alert, sound, badge nor content-available: 1; APNs would show nothing")
        }
        return false
    }
}
