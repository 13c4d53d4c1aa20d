import Foundation
import Hummingbird
import RetractKit
import RetractModel
import RetractStore

extension RetractAPI {
    /// `GET /v1/notifications`: the notifications the ledger holds, most
    /// recently sent first, a page at a time, with the retractions that take
    /// each. Of one app, or of every app the key may touch.
    func notifications(query: Parameters, caller: Caller) async throws -> Answer {
        try caller.require(.read)
        var request = NotificationQuery(limit: try Validate.limit(query.get("limit"), default: 50, maximum: NotificationQuery.maximumLimit))
        request.appIDs = try await apps(query.get("app"), for: caller)
        // The reference and labels asked for are of one account (the app's only one without ?account=).
        let account = query.get("account")
        if let account, let problem = AccountName.problem(with: account) { throw APIProblem.invalid("account", problem) }
        if let text = query.get("reference") {
            request.reference = LedgerScope.key(try Validate.reference(text, field: "reference").rawValue, account: account)
        }
        request.sentAfter = try query.get("sentAfter").map { (text) throws(APIProblem) in try Validate.date(text, field: "sentAfter") }
        request.sentBefore = try query.get("sentBefore").map { (text) throws(APIProblem) in try Validate.date(text, field: "sentBefore") }
        request.thread = query.get("thread").map { LedgerScope.key($0, account: account) }
        request.campaign = query.get("campaign").map { LedgerScope.key($0, account: account) }
        if let text = query.get("cursor") {
            request.cursor = try Validate.cursor { () throws(StoreError) in try NotificationCursor(encoded: text) }
        }
        if let (field, problem) = request.problem { throw APIProblem.invalid(field, problem) }
        let page = try await store.notificationPage(request)
        return Answer(.ok, NotificationsView(notifications: page.notifications.map(NotificationView.init), next: page.next?.encoded))
    }

    /// `GET /v1/audit`: the audit log, newest first, a page at a time. A key
    /// for every app reads all of it, the entries of no app (keys made and
    /// revoked) included; another key, the entries of its apps.
    func audit(query: Parameters, caller: Caller) async throws -> Answer {
        try caller.require(.read)
        var request = AuditQuery(limit: try Validate.limit(query.get("limit"), default: 100, maximum: AuditQuery.maximumLimit))
        request.appIDs = try await apps(query.get("app"), for: caller)
        request.since = try query.get("since").map { (text) throws(APIProblem) in try Validate.date(text, field: "since") }
        request.until = try query.get("until").map { (text) throws(APIProblem) in try Validate.date(text, field: "until") }
        request.action = query.get("action")
        if let text = query.get("cursor") {
            request.cursor = try Validate.cursor { () throws(StoreError) in try AuditCursor(encoded: text) }
        }
        if let (field, problem) = request.problem { throw APIProblem.invalid(field, problem) }
        let page = try await store.auditPage(request)
        return Answer(.ok, AuditView(entries: page.entries.map(AuditEntryView.init), next: page.next?.encoded))
    }

    /// The apps a read covers: the one named (404 when the key may not
    /// touch it, as for one that does not exist), else nil for a key of
    /// every app, else the key's own.
    private func apps(_ name: String?, for caller: Caller) async throws -> Set<Int64>? {
        if let name { return [try await app(named: name, for: caller, field: "app").id] }
        return caller.isForAllApps ? nil : caller.key.appIDs
    }
}

extension Validate {
    /// A page size: `default` when absent, else 1 to `maximum`.
    static func limit(_ text: String?, field: String = "limit", default: Int, maximum: Int) throws(APIProblem) -> Int {
        guard let text else { return `default` }
        guard let limit = Int(text), (1...maximum).contains(limit) else {
            throw APIProblem.invalid(field, "\"\(text.prefix(20))\": a number from 1 to \(maximum)")
        }
        return limit
    }

    /// A cursor read by `parse`, which says what is wrong with one.
    static func cursor<Cursor>(field: String = "cursor", _ parse: () throws(StoreError) -> Cursor) throws(APIProblem) -> Cursor {
        do {
            return try parse()
        } catch {
            throw APIProblem.invalid(field, "not a cursor this server gave; pass the `next` of the previous answer, or none")
        }
    }
}
