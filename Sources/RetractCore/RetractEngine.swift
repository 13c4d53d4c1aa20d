import Foundation
import Logging
import Metrics
import RetractKit
import RetractModel
import RetractStore

/// Retract's service logic: record deliveries, send originals, start
/// retractions and report on them. ``RetractionWorker`` does the fan-out.
package final class RetractEngine: Sendable {
    package let store: RetractStore
    package var transports: any TransportProvider { sender.transports }
    package let settings: EngineSettings
    /// What the engine and its workers send through.
    let sender: PushSender
    let logger: Logger
    /// Wakes the read couriers of this process: a read owes pushes.
    let readWake = WakeSignal()

    /// - Parameter metricsFactory: where push outcomes and retraction
    ///   durations are counted (`retract serve` gives its Prometheus registry's).
    package init(
        store: RetractStore,
        transports: any TransportProvider,
        settings: EngineSettings = EngineSettings(),
        logger: Logger = Logger(label: "retract.engine"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        precondition(settings.problem == nil, settings.problem ?? "")
        self.store = store
        self.settings = settings
        self.logger = logger
        sender = PushSender(
            transports: transports, window: settings.window, smallestWindow: settings.smallestWindow, policy: settings.retryPolicy,
            metrics: EngineMetrics(factory: metricsFactory))
    }

    /// How many pushes the app's window lets through `service` at once now
    /// (docs/engine.md, "Sizing to the round trip").
    package func window(of app: App, via service: PushService) -> Int {
        sender.pacing(for: app, via: service).window.size
    }

    /// The app named `name`, or ``RetractError/Code/unknownApp``.
    package func app(named name: String) async throws(RetractError) -> App {
        guard let app = try await app(findingNamed: name) else {
            let known = (try? await store.apps().map(\.name).sorted()) ?? []
            let hint = known.isEmpty ? "no app is registered yet (retract apps add)" : "known apps: \(known.joined(separator: ", "))"
            throw RetractError(.unknownApp, "no app named \"\(name)\"; \(hint)")
        }
        return app
    }

    /// The app with id `id`, if there is one.
    package func app(id: Int64) async throws(RetractError) -> App? {
        try await RetractError.store { () async throws(StoreError) in try await store.app(id: id) }
    }

    /// The app named `name`, if there is one (the store keeps apps read by name).
    package func app(findingNamed name: String) async throws(RetractError) -> App? {
        try await RetractError.store { () async throws(StoreError) in try await store.app(named: name) }
    }

    /// Makes the app's transport for each service it has credentials for, so
    /// a credential file that cannot be used is reported before anything is written.
    package func checkCredentials(of app: App) throws(RetractError) {
        try transports.checkTransports(for: app)
    }

    /// Reads every app's credential files again before its next push (`retract serve` on SIGHUP).
    package func reloadCredentials() {
        transports.reloadCredentials()
    }

    /// Registers an app after reading its key, certificate and service
    /// account as the sender will, so a file that cannot be used is refused now.
    ///
    /// - Throws: ``RetractError/Code/invalidInput`` naming the field,
    ///   ``RetractError/Code/credentials``, ``RetractError/Code/appExists``.
    package func registerApp(_ registration: AppRegistration, actor: String) async throws(RetractError) -> App {
        if let problem = registration.problem { throw RetractError(problem) }
        try transports.readCredentials(of: registration)
        do {
            let app = try await store.registerApp(registration, actor: actor)
            logger.info("app registered", metadata: ["app": "\(app.name)", "id": "\(app.id)", "actor": "\(actor)"])
            return app
        } catch  where error.code == .uniqueViolation {
            throw RetractError(.appExists, "an app named \"\(registration.name)\" is registered already", field: "name")
        } catch {
            throw RetractError(error)
        }
    }

    /// Changes `app` (as the ledger has it now) by `change`: checked as a
    /// registration is, the credential files it names read as sending will
    /// read them, then written with an audit entry for each field changed.
    package func updateApp(_ app: App, change: AppChange, actor: String) async throws(RetractError) -> App {
        let changed: App
        do {
            changed = try change.applied(to: app)
        } catch {
            throw RetractError(error)
        }
        if change.changesCredentials { try transports.readCredentials(of: AppRegistration(changed)) }
        let updated = try await RetractError.store { () async throws(StoreError) in
            try await store.updateApp(from: app, to: changed, actor: actor)
        }
        logger.info("app updated", metadata: ["app": "\(app.name)", "actor": "\(actor)"])
        return updated
    }

    // MARK: - Recording

    /// Deliveries of one reference to some devices of one app, checked and
    /// ready to be written (see ``recording(app:reference:tokens:sentAt:via:now:)``).
    package struct Recording: Sendable {
        fileprivate var deliveries: [Delivery]
    }

    /// Checks that `app` can reach devices through `service` (a delivery the
    /// app could not retract is refused now, not when a retraction fails on
    /// it) and that `sentAt` is within what the ledger keeps.
    ///
    /// With an `account`, the reference and labels are that account's
    /// (``LedgerScope``): a retraction of the account finds them, another's never does.
    ///
    /// - Throws: ``RetractError`` naming the field at fault: `transport`, `sentAt`, `account`.
    package func recording(
        app: App, reference: ReferenceID, tokens: [DeviceToken], sentAt: Date, via service: PushService, collapseID: String? = nil,
        labels: DeliveryLabels = DeliveryLabels(), account: String? = nil, now: Date = Date()
    ) throws(RetractError) -> Recording {
        try Self.check(account: account)
        if let problem = app.problem(reaching: service) { throw RetractError(.credentials, problem, field: "transport") }
        if let collapseID, let problem = Delivery.problem(withCollapseID: collapseID) {
            throw RetractError(.invalidInput, "collapseId: \(problem)", field: "collapseId")
        }
        if let (field, problem) = labels.problem { throw RetractError(.invalidInput, "\(field): \(problem)", field: field) }
        if sentAt < store.retention.oldestKept(now: now) {
            throw RetractError(
                .invalidInput, "sentAt: older than the \(store.retention.days)-day retention; it would be dropped at once", field: "sentAt")
        }
        if sentAt > now.addingTimeInterval(Retention.furthestAhead) {
            throw RetractError(.invalidInput, "sentAt: more than a day in the future", field: "sentAt")
        }
        let (reference, labels) = (LedgerScope.reference(reference, account: account), LedgerScope.labels(labels, account: account))
        return Recording(
            deliveries: tokens.map {
                Delivery(
                    appID: app.id, reference: reference, token: $0, sentAt: sentAt, transport: service, collapseID: collapseID,
                    labels: labels)
            })
    }

    /// Refuses an account that cannot be one (``AccountName``), naming the field `account`.
    package static func check(account: String?) throws(RetractError) {
        if let account, let problem = AccountName.problem(with: account) {
            throw RetractError(.invalidInput, "account: \(problem)", field: "account")
        }
    }

    /// Writes recordings in one transaction: all or none.
    ///
    /// - Returns: how many deliveries were new.
    package func record(_ recordings: [Recording], now: Date = Date()) async throws(RetractError) -> Int {
        try await recordReporting(recordings, now: now).new
    }

    /// ``record(_:now:)``, saying which retractions it made of deliveries
    /// whose reference was retracted already (queued for workers).
    package func recordReporting(
        _ recordings: [Recording], now: Date = Date(), ifRetracted rule: RetractStore.RetractedReference = .retract
    ) async throws(RetractError) -> RetractStore.Recorded {
        try await RetractError.store { () async throws(StoreError) in
            try await store.recordReporting(recordings.flatMap(\.deliveries), now: now, ifRetracted: rule)
        }
    }

    /// Records that `reference` reached `tokens` through `service`, in batches.
    ///
    /// - Returns: how many deliveries were new.
    package func record(
        app: App, reference: ReferenceID, tokens: [DeviceToken], sentAt: Date = Date(), via service: PushService = .apns,
        collapseID: String? = nil, labels: DeliveryLabels = DeliveryLabels(), account: String? = nil
    ) async throws(RetractError) -> Int {
        try await recordReporting(
            app: app, reference: reference, tokens: tokens, sentAt: sentAt, via: service, collapseID: collapseID, labels: labels,
            account: account
        ).new
    }

    /// ``record(app:reference:tokens:sentAt:via:collapseID:)``, saying which
    /// retractions it made of late deliveries.
    package func recordReporting(
        app: App, reference: ReferenceID, tokens: [DeviceToken], sentAt: Date = Date(), via service: PushService = .apns,
        collapseID: String? = nil, labels: DeliveryLabels = DeliveryLabels(), account: String? = nil
    ) async throws(RetractError) -> RetractStore.Recorded {
        var recorded = RetractStore.Recorded()
        // A failure part-way leaves the earlier batches recorded; recording them again changes nothing.
        for start in stride(from: 0, to: tokens.count, by: Self.recordStatement) {
            let batch = Array(tokens[start..<min(start + Self.recordStatement, tokens.count)])
            let made = try await recordReporting([
                recording(
                    app: app, reference: reference, tokens: batch, sentAt: sentAt, via: service, collapseID: collapseID, labels: labels,
                    account: account)
            ])
            recorded.new += made.new
            recorded.lateRetractions += made.lateRetractions
        }
        return recorded
    }

    /// Deliveries per statement when recording.
    static let recordStatement = 10_000

    // MARK: - Retractions

    /// Makes a retraction of `target` for `app`: references, or every
    /// delivery a selector takes; workers send its pushes. With an
    /// `account`, the target is that account's (``LedgerScope``): its pushes
    /// name it, and phones remove only its notifications.
    ///
    /// - Parameter requireRecorded: when true, references of which no
    ///   delivery was ever recorded are ``RetractError/Code/unknownReference``
    ///   (all of them unknown) rather than a retraction of no devices. A
    ///   selector that takes nothing yet is made all the same: deliveries
    ///   recorded later within its range are retracted as they come.
    package func startRetraction(
        app: App,
        target: RetractionTarget,
        requestedBy: String,
        reason: String? = nil,
        dryRun: Bool = false,
        idempotencyKey: String? = nil,
        requireRecorded: Bool = false,
        mode: RetractionMode? = nil,
        badge: Int? = nil,
        text: String? = nil,
        requestedKeyID: UUID? = nil,
        edit: NotificationEdit? = nil,
        account: String? = nil
    ) async throws(RetractError) -> (retraction: Retraction, unknownReferences: [ReferenceID]) {
        try Self.check(account: account)
        if let edit { try Self.check(edit, target: target, text: text, account: account) }
        let target = LedgerScope.target(target, account: account)
        let mode = mode ?? app.retractionMode
        let request = RetractionRequest(
            appID: app.id, target: target, requestedBy: requestedBy, reason: reason, dryRun: dryRun, idempotencyKey: idempotencyKey,
            mode: mode, badge: badge, text: text, requestedKeyID: requestedKeyID, edit: edit)
        try await check(mode: mode, badge: badge, text: text, app: app, target: target)
        var unknown: [ReferenceID] = []
        if requireRecorded, case .references(let references) = target {
            let recorded = try await RetractError.store { () async throws(StoreError) in
                try await store.recordedReferences(appID: app.id, among: references)
            }
            unknown = Array(Set(references).subtracting(recorded)).sorted().map { LedgerScope.split($0).reference }
            if recorded.isEmpty {
                let names = unknown.map { "\"\($0)\"" }.joined(separator: ", ")
                throw RetractError(.unknownReference, "app \(app.name) has no recorded delivery of \(names)")
            }
        }
        let made = try await RetractError.store { () async throws(StoreError) in try await store.createRetraction(request) }
        logger.info(
            "retraction made",
            metadata: [
                "retraction": "\(made.retraction.id)", "app": "\(app.name)", "devices": "\(made.retraction.counts.total)",
                "replayed": "\(made.replayed)",
            ])
        return (made.retraction, unknown)
    }

    /// Refuses an edit that is not of one reference, or whose text cannot be
    /// sent (``RetractionMode/problem(withEdit:reference:)``). Its alerts
    /// show its own text: a retraction text has no place in one.
    private static func check(_ edit: NotificationEdit, target: RetractionTarget, text: String?, account: String?) throws(RetractError) {
        guard case .references(let references) = target, references.count == 1 else {
            throw RetractError(.invalidInput, "reference: an edit is of one reference", field: "reference")
        }
        if text != nil {
            throw RetractError(.invalidInput, "text: an edit's alerts show its own title and body", field: "text")
        }
        if let problem = RetractionMode.problem(withEdit: edit, reference: references[0], account: account) {
            throw RetractError(.invalidInput, problem.description, field: problem.field)
        }
    }

    /// Refuses what a mode cannot do before anything is written: a badge on
    /// a background push (APNs refuses `aps.badge` there), and `replace`
    /// when no delivery it takes has a collapse id to replace.
    private func check(mode: RetractionMode, badge: Int?, text: String?, app: App, target: RetractionTarget) async throws(RetractError) {
        if let text {
            if let problem = RetractionMode.problem(withText: text) { throw RetractError(.invalidInput, "text: \(problem)", field: "text") }
            if mode == .background {
                throw RetractError(
                    .invalidInput,
                    "text: a background retraction shows nothing, so it has no text; use mode service-extension or replace",
                    field: "text")
            }
        }
        if let badge, badge < 0 || badge > RetractionMode.maximumBadge {
            throw RetractError(.invalidInput, "badge: \(badge); a badge is 0 to \(RetractionMode.maximumBadge)", field: "badge")
        }
        if badge != nil, mode == .background {
            throw RetractError(
                .invalidInput,
                "badge: a background push cannot set a badge (APNs refuses aps.badge in one); use mode service-extension or replace",
                field: "badge")
        }
        guard mode == .replace else { return }
        let replaceable = try await RetractError.store { () async throws(StoreError) in
            try await store.hasCollapseIDs(appID: app.id, target)
        }
        guard !replaceable else { return }
        let whose = app.retractionMode == .replace ? "app \(app.name)'s default mode, replace," : "replace"
        let these =
            if case .selector(let selector) = target { "the deliveries of this \(selector.kind.rawValue)" } else { "these references" }
        throw RetractError(
            .invalidInput,
            "mode: \(whose) needs the collapse id each original was sent with, and no delivery of \(these) has one "
                + "(record them with their collapse id, or send them through Retract); use service-extension or background",
            field: "mode")
    }

    /// Cancels a retraction (``RetractStore/cancelRetraction(id:by:reason:)``):
    /// nothing more of it is queued, its pages in flight finish, the rest of
    /// its devices are spared. ``forgetInFeed(_:)`` is the next step.
    ///
    /// - Returns: its status after the cancel, and whether this call
    ///   cancelled it (false: it was cancelled already).
    /// - Parameter apps: the apps whose retractions the caller may cancel;
    ///   nil for every app. Another app's retraction is an unknown one.
    package func cancel(
        _ id: UUID, by actor: String, reason: String, apps: [Int64]? = nil
    ) async throws(RetractError) -> (RetractionStatus, cancelled: Bool) {
        let cancelled = try await Self.changing(id) { () async throws(StoreError) in
            try await store.cancelRetraction(id: id, by: actor, reason: reason, apps: apps).cancelled
        }
        logger.info("retraction cancelled", metadata: ["retraction": "\(id)", "by": "\(actor)", "now": "\(cancelled)"])
        return (try await status(of: id), cancelled)
    }

    /// Approves or rejects a retraction awaiting approval
    /// (``RetractStore/decideApproval(of:_:by:keyID:reason:apps:)``); its status after.
    package func decideApproval(
        of id: UUID, _ decision: RetractStore.ApprovalDecision, by actor: String, keyID: UUID?, reason: String, apps: [Int64]? = nil
    ) async throws(RetractError) -> RetractionStatus {
        _ = try await Self.changing(id) { () async throws(StoreError) in
            try await store.decideApproval(of: id, decision, by: actor, keyID: keyID, reason: reason, apps: apps)
        }
        logger.notice("retraction \(decision == .approve ? "approved" : "rejected")", metadata: ["retraction": "\(id)", "by": "\(actor)"])
        return try await status(of: id)
    }

    /// A change a person makes to retraction `id` with a reason (a cancel, a
    /// decision), its store errors said as the engine says them: no such
    /// retraction, or a reason the store refused.
    private static func changing<Result: Sendable>(
        _ id: UUID, _ change: () async throws(StoreError) -> Result
    ) async throws(RetractError) -> Result {
        do {
            return try await change()
        } catch  where error.code == .notFound {
            throw RetractError(.unknownRetraction, "no retraction \(id.uuidString.lowercased())")
        } catch  where error.code == .invalidInput {
            throw RetractError(.invalidInput, error.message, field: "reason")
        } catch {
            throw RetractError(error)
        }
    }

    /// Takes a cancelled retraction out of the device feed
    /// (``RetractStore/forgetInFeed(_:)``); a server's chores do it for one
    /// this could not.
    package func forgetInFeed(_ id: UUID) async throws(RetractError) {
        let forgotten = try await RetractError.store { () async throws(StoreError) in try await store.forgetInFeed(id) }
        logger.info("cancelled retraction out of the device feed", metadata: ["retraction": "\(id)", "rows": "\(forgotten)"])
    }

    /// A retraction and why its failed devices failed.
    ///
    /// `mayLag`: read from the read replica when the store has one (a
    /// status seconds old), but from the primary a retraction the replica
    /// does not have yet: one just made is never answered as unknown.
    package func status(of id: UUID, mayLag: Bool = false) async throws(RetractError) -> RetractionStatus {
        var fromReplica = mayLag && store.readsFromReplica
        var retraction = try await RetractError.store { () async throws(StoreError) in
            try await store.retraction(id: id, mayLag: fromReplica)
        }
        if retraction == nil, fromReplica {
            fromReplica = false
            retraction = try await RetractError.store { () async throws(StoreError) in try await store.retraction(id: id) }
        }
        guard let retraction else { throw RetractError(.unknownRetraction, "no retraction \(id.uuidString.lowercased())") }
        let lagging = fromReplica
        let failures = try await RetractError.store { () async throws(StoreError) in
            try await store.retractionFailures(id: id, mayLag: lagging)
        }
        let dialect = try await app(id: retraction.appID)?.dialect ?? .canonical
        let webhook = try await RetractError.store { () async throws(StoreError) in
            try await store.webhookDelivery(retractionID: id, mayLag: lagging)
        }
        return RetractionStatus(
            retraction: retraction, failures: failures, warnings: RetractionWarnings.before(retraction, dialect: dialect),
            webhook: webhook)
    }
}

extension RetractEngine {
    // MARK: - The device feed

    /// What was retracted for one device of `app` after `cursor`, oldest
    /// first: for the app to catch up at launch on pushes iOS held back.
    package func deviceFeed(
        token: DeviceToken, appID: Int64, after cursor: DeviceFeedCursor = .start, limit: Int,
        abandonWhen: RetractStore.AbandonWhen? = nil
    ) async throws(RetractError) -> DeviceFeedPage {
        try await RetractError.store { () async throws(StoreError) in
            try await store.retractions(forDevice: token, appID: appID, after: cursor, limit: limit, abandonWhen: abandonWhen)
        }
    }
}

/// A retraction with the reasons its failed devices failed.
package struct RetractionStatus: Sendable, Hashable {
    package var retraction: Retraction
    /// Devices given up on, by reason.
    package var failures: [String: Int]
    /// What its app's dialect costs it (``RetractionWarnings/before(_:dialect:)``).
    package var warnings: [String]
    /// Its completion webhook, if one was queued.
    package var webhook: WebhookDelivery?

    package init(retraction: Retraction, failures: [String: Int], warnings: [String] = [], webhook: WebhookDelivery? = nil) {
        self.retraction = retraction
        self.failures = failures
        self.warnings = warnings
        self.webhook = webhook
    }

    package var isFinished: Bool { retraction.state.isFinished }

    /// What the failures suggest about the app's own settings, if anything,
    /// and what the number of pushes to one device may cost (``RetractionWarnings``).
    package var hints: [String] {
        let counts = retraction.counts
        return ConfigurationHint.hints(failures: failures, attempted: counts.sent + counts.dead - counts.skipped + counts.failed)
            + (warnings.isEmpty ? RetractionWarnings.after(retraction) : [])
    }
}
