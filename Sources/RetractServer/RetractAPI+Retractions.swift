import Foundation
import Hummingbird
import Logging
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractStore

extension RetractAPI {
    /// The longest `reason` kept in the audit log.
    static let maximumReasonLength = 1000
    /// Retractions per page of a device's feed: the default and the most.
    static let defaultFeedPage = 100
    static let maximumFeedPage = 500

    /// `POST /v1/retractions`: makes a retraction; the workers send its pushes.
    func retract(_ input: PostInput) async throws -> Answer {
        try input.caller.require(.retract)
        let given = try JSONBody.decode(RetractionBody.self, from: input.body)
        let app = try await app(named: given.app, for: input.caller, field: "app")
        let target = try Self.target(of: given)
        let asked = try checked(reason: given.reason, dryRun: given.dryRun, mode: given.mode, app: app, input: input)
        let (retraction, _) = try await engine.startRetraction(
            app: app, target: target, requestedBy: input.caller.actor, reason: asked.reason, dryRun: asked.dryRun,
            idempotencyKey: asked.ledgerKey, mode: asked.mode, badge: given.badge, text: given.text, requestedKeyID: input.caller.key.id,
            account: given.account)
        return accepted(retraction, app: app)
    }

    /// `POST /v1/edits`: an edit of one reference (docs/api.md, "Edits"): its
    /// devices are sent the new text, as a retraction's are sent a removal,
    /// and it is followed, cancelled and approved as one, at
    /// `/v1/retractions/{id}`.
    func editNotification(_ input: PostInput) async throws -> Answer {
        try input.caller.require(.retract)
        let given = try JSONBody.decode(EditBody.self, from: input.body)
        if let (field, problem) = given.retractionField { throw APIProblem.invalid(field, problem) }
        let app = try await app(named: given.app, for: input.caller, field: "app")
        let reference = try Validate.reference(given.reference, field: "reference")
        let asked = try checked(reason: given.reason, dryRun: given.dryRun, mode: given.mode, app: app, input: input)
        let (edit, _) = try await engine.startRetraction(
            app: app, target: .references([reference]), requestedBy: input.caller.actor, reason: asked.reason, dryRun: asked.dryRun,
            idempotencyKey: asked.ledgerKey, requireRecorded: true, mode: asked.mode, requestedKeyID: input.caller.key.id,
            edit: NotificationEdit(title: given.title, body: given.body), account: given.account)
        return accepted(edit, app: app)
    }

    /// What a retraction and an edit both take from their body, checked.
    private struct Asked {
        var reason: String?
        var dryRun: Bool
        var mode: RetractionMode?
        /// The idempotency key as the ledger keeps it, with the retraction, in the same
        /// statement: a retry after a crash that lost the HTTP layer's record still finds it.
        var ledgerKey: String?
    }

    /// The reason, dry run and mode a body gives, each bad one named; where this
    /// process sends, an app key it cannot read is refused before anything is written.
    private func checked(reason: String?, dryRun: Bool?, mode: String?, app: App, input: PostInput) throws -> Asked {
        let dryRun = dryRun ?? false
        let asked = Asked(
            reason: try reason.map { (text) throws(APIProblem) in
                try Validate.text(text, field: "reason", maximumLength: Self.maximumReasonLength)
            },
            dryRun: dryRun, mode: try Validate.mode(mode, field: "mode"),
            ledgerKey: input.idempotencyKey.map { "api:\(input.caller.key.id.uuidString.lowercased()):\($0)" })
        if !dryRun && settings.mode.runsWorkers { try engine.checkCredentials(of: app) }
        return asked
    }

    /// 202 with what was made, and where to follow it; remembered, in case
    /// a failover loses it (``AcknowledgedRetractions``).
    private func accepted(_ retraction: Retraction, app: App) -> Answer {
        acknowledged.remember(retraction.id, appID: app.id, app: app.name)
        let warnings = RetractionWarnings.before(retraction, dialect: app.dialect)
        return Answer(
            .accepted,
            RetractionCreatedView(
                id: retraction.id.uuidString.lowercased(), app: app.name, account: retraction.account, devices: retraction.counts.total,
                state: retraction.state.rawValue, dryRun: retraction.dryRun, mode: retraction.mode.rawValue,
                referencesMatched: retraction.referencesMatched, mostReferencesPerDevice: retraction.mostReferences,
                warnings: warnings.isEmpty ? nil : warnings),
            headers: [.location: "/v1/retractions/\(retraction.id.uuidString.lowercased())"])
    }

    /// The references a retraction body names, or the one selector it gives
    /// instead, with its range; each bad field named.
    static func target(of given: RetractionBody) throws(APIProblem) -> RetractionTarget {
        let selectors = given.selectors
        if selectors.count > 1 {
            throw APIProblem.invalid(
                selectors[1].kind.rawValue,
                "give one selector, not \(selectors.map(\.kind.rawValue).joined(separator: " and ")): a retraction takes one")
        }
        var selector: RetractionSelector?
        if let (kind, value) = selectors.first {
            selector = RetractionSelector(
                kind, value,
                sentAfter: try given.sentAfter.map { (text) throws(APIProblem) in try Validate.date(text, field: "sentAfter") },
                sentBefore: try given.sentBefore.map { (text) throws(APIProblem) in try Validate.date(text, field: "sentBefore") })
        } else {
            for (field, value) in [("sentAfter", given.sentAfter), ("sentBefore", given.sentBefore)] where value != nil {
                throw APIProblem.invalid(field, "a time range goes with a selector (thread, sender, recipient or campaign)")
            }
        }
        var references: [ReferenceID] = []
        for (index, text) in (given.references ?? []).enumerated() {
            references.append(try Validate.reference(text, field: "references[\(index)]"))
        }
        do {
            return try RetractionTarget(references: references, selector: selector)
        } catch {
            throw APIProblem.invalid(error.field, error.message)
        }
    }

    /// `POST /v1/retractions/{id}/cancel`: stops a retraction. Nothing more of
    /// it is queued; its pages in flight finish their pushes (`cancelling`),
    /// then it is `cancelled` with the devices not reached counted as spared.
    /// Cancelling it again answers the same, and is not audited again.
    func cancel(_ input: PostInput) async throws -> Answer {
        // The store looks for it among the caller's apps as it cancels, on connections of its own: the pushes
        // stop before anything is read from the pool the workers sending it may be holding (the answer's
        // account is read from it after).
        try await changeRetraction(input, requiring: .retract) { (id, reason, caller) async throws(RetractError) in
            let status = try await engine.cancel(id, by: caller.actor, reason: reason, apps: caller.appsTouched).0
            Self.forgetInFeed(status.retraction.id, engine: engine, logger: logger)
            return status
        }
    }

    /// `POST /v1/retractions/{id}/approve` and `/reject`: a second key (scope
    /// `approve`, another key than the one that asked) decides a retraction
    /// awaiting approval, with a reason (required, audited). Approved, it is
    /// queued and sent; rejected, nothing of it is sent.
    func decide(_ decision: RetractStore.ApprovalDecision, _ input: PostInput) async throws -> Answer {
        try await changeRetraction(input, requiring: .approve) { (id, reason, caller) async throws(RetractError) in
            try await engine.decideApproval(
                of: id, decision, by: caller.actor, keyID: caller.key.id, reason: reason, apps: caller.appsTouched)
        }
    }

    /// A change to the retraction the path names, with the body's reason
    /// (required): its account after, or 404 for an id that is not a UUID,
    /// an unknown one or another app's (not found, not forbidden).
    private func changeRetraction(
        _ input: PostInput, requiring scope: APIKeyRecord.Scope,
        _ change: (UUID, String, Caller) async throws(RetractError) -> RetractionStatus
    ) async throws -> Answer {
        try input.caller.require(scope)
        let id = input.id ?? ""
        let reason = try Validate.reason(try JSONBody.decode(ReasonBody.self, from: input.body).reason)
        let notFound = APIProblem(.notFound, "no retraction \(id.prefix(64)) for this API key")
        guard let uuid = UUID(uuidString: id) else { throw notFound }
        let status: RetractionStatus
        do {
            status = try await change(uuid, reason, input.caller)
        } catch {
            guard error.code == .unknownRetraction else { throw error }
            throw notFound
        }
        guard let app = try await engine.app(id: status.retraction.appID) else { throw notFound }
        return Answer(.ok, RetractionView(status, app: app.name))
    }

    /// Takes a cancelled retraction out of the device feed after the answer:
    /// a row per device, seconds for millions. What a stop of this process
    /// interrupts, the chores of a server finish (`MaintenanceService`).
    static func forgetInFeed(_ id: UUID, engine: RetractEngine, logger: Logger) {
        Task {
            do {
                try await engine.forgetInFeed(id)
            } catch {
                logger.warning(
                    "cancelled retraction still in the device feed; the server's chores take it out",
                    metadata: ["retraction": "\(id)", "error": "\(error)"])
            }
        }
    }

    /// `GET /v1/retractions/{id}`: a retraction's state and counts.
    func status(_ id: String, caller: Caller) async throws -> Answer {
        // From the read replica when there is one: callers poll this.
        let status: RetractionStatus
        let app: App
        do {
            (status, app) = try await Self.retraction(id, for: caller, engine: engine, mayLag: true)
        } catch let problem as APIProblem where problem.kind == .notFound {
            guard let uuid = UUID(uuidString: id), let lost = acknowledged.lost(uuid), caller.mayTouch(appID: lost.appID) else {
                throw problem
            }
            throw APIProblem(
                .retractionLost,
                "retraction \(id.lowercased()) of \(lost.app) was answered 202 at \(lost.acknowledgedAt.formatted(.iso8601)), but the database no longer has it: it was lost in a failover (asynchronous replication). Make it again."
            )
        }
        return Answer(.ok, RetractionView(status, app: app.name))
    }

    /// The retraction with `id` and its app, when `caller` may read it; 404
    /// otherwise, as for one that does not exist. The API and the console ask
    /// the same. `mayLag`: see ``RetractEngine/status(of:mayLag:)``.
    static func retraction(
        _ id: String, for caller: Caller, engine: RetractEngine, requiring scope: APIKeyRecord.Scope = .read, mayLag: Bool = false
    ) async throws -> (RetractionStatus, App) {
        try caller.require(scope)
        let notFound = APIProblem(.notFound, "no retraction \(id.prefix(64)) for this API key")
        guard let uuid = UUID(uuidString: id) else { throw notFound }
        let status: RetractionStatus
        do {
            status = try await engine.status(of: uuid, mayLag: mayLag)
        } catch {
            guard error.code == .unknownRetraction else { throw error }
            throw notFound
        }
        guard caller.mayTouch(appID: status.retraction.appID), let app = try await engine.app(id: status.retraction.appID) else {
            throw notFound
        }
        return (status, app)
    }

    /// `GET /v1/devices/{token}/retractions`: what was retracted for one
    /// device after a cursor, for the app to catch up at launch on pushes iOS
    /// held back.
    ///
    /// Every page carries an ETag (``FeedValidator``). Given back in
    /// `If-None-Match` for the same page, a page that listed nothing is
    /// answered 304 without a body while nothing new came: from memory when
    /// no retraction of the app past the page's horizon took the device
    /// (``FeedMemory``), else after reading the page again. It runs outside
    /// ``DatabaseHealth/whileUp(_:)``: what memory answers does not wait for
    /// the database, and the page's read runs in
    /// ``DatabaseHealth/whileUpReading(_:)``, without a race around it.
    func deviceFeed(_ tokenText: String, request: Request, caller: Caller) async throws -> Response {
        try caller.require(.client)
        let query = request.uri.queryParameters
        // An FCM registration token is named as such; a token is hex otherwise.
        let service = try Validate.transport(query.get("transport"), field: "transport")
        let token = try Validate.token(tokenText, field: "token", service: service)
        let appID: Int64
        if let name = query.get("app") {
            appID = try await health.whileUp { try await app(named: name, for: caller, field: "app").id }
        } else if caller.key.appIDs.count == 1, let only = caller.key.appIDs.first {
            // The key's only app: a key's apps exist (a foreign key), so it is not read.
            appID = only
        } else {
            throw APIProblem.invalid("app", "missing: this API key is for several apps; name one with ?app=")
        }
        let limit = try Validate.limit(query.get("limit"), default: Self.defaultFeedPage, maximum: Self.maximumFeedPage)
        var cursor = DeviceFeedCursor.start
        if let text = query.get("since") {
            guard let given = DeviceFeedCursor(encoded: text) else {
                throw APIProblem.invalid("since", "not a cursor this server gave; pass the cursor of the previous answer, or none")
            }
            cursor = given
        }
        // An account's retractions only: what a phone reads for one of its accounts.
        let account = query.get("account")
        if let account, let problem = AccountName.problem(with: account) { throw APIProblem.invalid("account", problem) }
        let scope = account.map(FeedValidator.digest) ?? 0
        let device = DeviceDigest.of(token)
        let asked = FeedValidator.all(in: request.headers[.ifNoneMatch]).first {
            $0.saidNothing(appID: appID, device: device, since: cursor, limit: limit, account: scope)
        }
        if let asked, await feedMemory.isQuiet(appID: appID, device: device, since: asked.horizon) {
            feedMetrics.answered(.fromMemory)
            return Self.notModified(asked)
        }
        let page = try await health.whileUpReading { [cursor] abandonWhen in
            try await engine.deviceFeed(token: token, appID: appID, after: cursor, limit: limit, abandonWhen: abandonWhen)
        }
        let entries = page.retractions.compactMap { entry -> DeviceFeedView.Entry? in
            // A retraction's references are of one account: the ledger keeps it with each.
            let of = entry.references.first.flatMap { LedgerScope.split($0).account }
            guard account.map({ $0 == of }) ?? true else { return nil }
            return .init(
                id: entry.id.uuidString.lowercased(), references: entry.references.map { LedgerScope.split($0).reference.rawValue },
                retractedAt: entry.retractedAt, account: of)
        }
        // What the page read counts, not what the account filter kept: a page of other accounts' retractions moves the
        // cursor past them (200), and only a page of none is "nothing new" (304).
        let validator = FeedValidator(
            appID: appID, device: device, since: cursor, limit: limit, horizon: page.horizon, listed: page.retractions.count,
            account: scope)
        if asked != nil, page.retractions.isEmpty {
            feedMetrics.answered(.readUnchanged)
            return Self.notModified(validator)
        }
        feedMetrics.answered(.read)
        let view = DeviceFeedView(retractions: entries, cursor: page.cursor.encoded, hasMore: page.hasMore)
        return Answer(.ok, json: view.json, headers: Self.feedHeaders(validator)).response
    }

    /// A feed page's caching: the device's own (`private`), and asked again
    /// each time (`no-cache`), since a retraction can come at any moment.
    private static func feedHeaders(_ validator: FeedValidator) -> HTTPFields {
        [.eTag: validator.etag, .cacheControl: "private, no-cache"]
    }

    private static func notModified(_ validator: FeedValidator) -> Response {
        Response(status: .notModified, headers: feedHeaders(validator))
    }
}
