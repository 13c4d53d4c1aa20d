import Foundation
import Hummingbird
import RetractCore
import RetractKit
import RetractModel
import RetractStore

// The console's reading pages: the notification list, one notification, the audit log.
extension Console {
    // MARK: - Notifications

    struct AppOption: Sendable {
        var name: String
        var selected: Bool
    }

    struct NotificationFilter: Sendable {
        var reference = ""
        var thread = ""
        var campaign = ""
        var sentAfter = ""
        var sentBefore = ""
    }

    struct NotificationRow: Sendable {
        struct Retracted: Sendable {
            var state: String
            var summary: String
        }

        var app: String
        var reference: String
        var link: String
        var devices: Int
        var deadDevices: Int
        var lastSent: String
        var lastSentISO: String
        var thread: String?
        var campaign: String?
        /// The retract-many form for the row's thread and campaign, for a key that may retract.
        var retractThread: String?
        var retractCampaign: String?
        var retracted: Retracted?
    }

    struct NotificationsPage: Sendable {
        var session: SessionView
        var apps: [AppOption]
        var filter: NotificationFilter
        var rows: [NotificationRow]
        var hasRows: Bool
        var error: String?
        var next: String?
    }

    func notifications(_ request: Request, _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        try signedIn.caller.require(.read)
        let parameters = request.uri.queryParameters
        func given(_ name: String) -> String? {
            guard let value = parameters.get(name)?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        let apps = try await visibleApps(signedIn)
        let chosen = given("app")
        var session = SessionView(signedIn)
        session.onNotifications = true
        var page = NotificationsPage(
            session: session, apps: apps.map { AppOption(name: $0.name, selected: $0.name == chosen) }, filter: NotificationFilter(),
            rows: [], hasRows: false)
        page.filter.reference = given("reference") ?? ""
        page.filter.thread = given("thread") ?? ""
        page.filter.campaign = given("campaign") ?? ""
        // Never asked: the last day, so that the first page of a large ledger reads one day's
        // partitions, not the whole retention. Cleared in the form (sent empty): any time.
        let sentAfter = parameters.get("sentAfter") == nil ? ConsoleTime.inputValue(Date().addingTimeInterval(-86_400)) : given("sentAfter")
        page.filter.sentAfter = sentAfter ?? ""
        page.filter.sentBefore = given("sentBefore") ?? ""
        do {
            var query = NotificationQuery(appIDs: Set(apps.map(\.id)), limit: Self.pageSize)
            if let chosen { query.appIDs = [try await app(named: chosen, signedIn).id] }
            if let text = given("reference") { query.reference = try Validate.reference(text, field: "reference").rawValue }
            query.thread = given("thread")
            query.campaign = given("campaign")
            query.sentAfter = try sentAfter.map { text throws(APIProblem) in try Self.inputTime(text, field: "Sent after") }
            query.sentBefore = try given("sentBefore").map { text throws(APIProblem) in try Self.inputTime(text, field: "Sent before") }
            if let text = given("cursor") { query.cursor = try NotificationCursor(encoded: text) }
            let found = try await store.notificationPage(query)
            let names = Dictionary(uniqueKeysWithValues: apps.map { ($0.id, $0.name) })
            let mayRetract = session.mayRetract
            let range = page.filter
            page.rows = found.notifications.map { summary in
                let app = names[summary.appID] ?? summary.appName
                // The retract-many form for the label, over the range the list shows.
                func retractAll(_ kind: RetractionSelector.Kind, _ value: String?) -> String? {
                    guard mayRetract, let value else { return nil }
                    return ConsoleLinks.retractMany(
                        app: app, kind, value, sentAfter: range.sentAfter, sentBefore: range.sentBefore)
                }
                return NotificationRow(
                    app: app, reference: Self.shownKey(summary.reference),
                    link: ConsoleLinks.notification(app: app, reference: summary.reference),
                    devices: summary.devices, deadDevices: summary.deadDevices, lastSent: ConsoleTime.text(summary.lastSentAt),
                    lastSentISO: summary.lastSentAt.formatted(.iso8601), thread: summary.thread.map(Self.shownKey),
                    campaign: summary.campaign.map(Self.shownKey),
                    retractThread: retractAll(.thread, summary.thread), retractCampaign: retractAll(.campaign, summary.campaign),
                    retracted: Self.retractedSummary(summary.retractions))
            }
            page.hasRows = !page.rows.isEmpty
            page.next = found.next.map { Self.nextPage("/console/notifications", parameters, cursor: $0.encoded) }
        } catch {
            page.error = try Self.searchProblem(error)
        }
        return pages.render("notifications", page)
    }

    /// The latest non-dry-run retraction, as the list says it: state, mode, who. A
    /// notification only edited says so: it was given new text, not removed.
    static func retractedSummary(_ retractions: [RetractionBrief]) -> NotificationRow.Retracted? {
        let made = retractions.filter { !$0.dryRun }
        guard let latest = made.filter({ !$0.isEdit }).max(by: { $0.createdAt < $1.createdAt }) else {
            guard let edit = made.max(by: { $0.createdAt < $1.createdAt }) else { return nil }
            return .init(state: edit.state.rawValue, summary: "edited (\(edit.state.rawValue), \(edit.mode.rawValue))")
        }
        return .init(state: latest.state.rawValue, summary: "\(latest.state.rawValue), \(latest.mode.rawValue)")
    }

    static func inputTime(_ text: String, field: String) throws(APIProblem) -> Date {
        guard let date = ConsoleTime.parseInput(text) else {
            throw APIProblem.invalid(field, "\"\(text.prefix(40))\" is not a time such as 2026-11-26T13:45 (UTC)")
        }
        return date
    }

    // MARK: - One notification

    struct DeviceRow: Sendable {
        var token: String
        var transport: String
        var sentAt: String
        var dead: String?
    }

    struct RetractionRow: Sendable {
        var id: String
        var createdAt: String
        var state: String
        var stateLabel: String
        var mode: String
        var requestedBy: String
        var reason: String
    }

    struct NotificationPageView: Sendable {
        var session: SessionView
        var app: String
        var appQuery: String
        /// As a person reads it; ``referenceKey`` as the ledger keeps it, which the forms send.
        var reference: String
        var referenceKey: String
        var devices: Int
        var deadDevices: Int
        var firstSent: String
        var lastSent: String
        var thread: String?
        var campaign: String?
        var mayRetract: Bool
        /// The retract-many form for the notification's thread and campaign, for a key that may retract.
        var retractThread: String?
        var retractCampaign: String?
        var formToken: String
        var modes: [ConsoleMode.Option]
        var retractions: [RetractionRow]
        var hasRetractions: Bool
        var deviceRows: [DeviceRow]
        var devicesShown: Int?
    }

    func notification(_ request: Request, _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        try signedIn.caller.require(.read)
        let parameters = request.uri.queryParameters
        let app = try await app(named: parameters.get("app") ?? "", signedIn)
        // The ledger's key, as the list links to it: an account's reference carries its account.
        let key = parameters.get("reference") ?? ""
        let reference = try Validate.reference(try Validate.ledgerKey(key, field: "reference").value, field: "reference")
        guard let detail = try await store.notificationDetail(appID: app.id, reference: key, deviceLimit: Self.devicesShown)
        else {
            throw APIProblem(.notFound, "\(app.name) has no notification \(reference.rawValue.prefix(80)) on record.")
        }
        let summary = detail.summary
        let retractions = summary.retractions.sorted { $0.createdAt > $1.createdAt }.map { brief in
            RetractionRow(
                id: brief.id.uuidString.lowercased(), createdAt: ConsoleTime.text(brief.createdAt), state: brief.state.rawValue,
                stateLabel: (brief.dryRun ? "dry run" : brief.state.rawValue) + (brief.isEdit ? ", edit" : ""), mode: brief.mode.rawValue,
                requestedBy: brief.requestedBy,
                reason: brief.reason ?? "")
        }
        var session = SessionView(signedIn)
        session.onNotifications = true
        func retractAll(_ kind: RetractionSelector.Kind, _ value: String?) -> String? {
            guard session.mayRetract, let value else { return nil }
            return ConsoleLinks.retractMany(app: app.name, kind, value, sentAfter: "", sentBefore: "")
        }
        let view = NotificationPageView(
            session: session, app: app.name, appQuery: Self.percentEncoded(app.name), reference: Self.shownKey(key), referenceKey: key,
            devices: summary.devices, deadDevices: summary.deadDevices, firstSent: ConsoleTime.text(summary.firstSentAt),
            lastSent: ConsoleTime.text(summary.lastSentAt), thread: summary.thread.map(Self.shownKey),
            campaign: summary.campaign.map(Self.shownKey),
            mayRetract: session.mayRetract, retractThread: retractAll(.thread, summary.thread),
            retractCampaign: retractAll(.campaign, summary.campaign), formToken: signedIn.formToken,
            modes: ConsoleMode.options(default: app.retractionMode), retractions: retractions, hasRetractions: !retractions.isEmpty,
            deviceRows: detail.devices.map { device in
                DeviceRow(
                    token: Self.shown(device.transport.text(of: device.token), to: signedIn.caller), transport: device.transport.rawValue,
                    sentAt: ConsoleTime.text(device.sentAt),
                    dead: device.dead.map { "\(ConsoleTime.text($0.since)): \($0.reason)" })
            },
            devicesShown: summary.devices > detail.devices.count ? detail.devices.count : nil)
        return pages.render("notification", view)
    }

    /// A device token as a key may see it: whole for an admin key; else, as
    /// the API never gives tokens to a `read` key, its first and last few
    /// characters, enough to tell devices apart on the page.
    static func shown(_ token: String, to caller: Caller) -> String {
        if caller.key.scopes.contains(.admin) { return token }
        // At most a quarter at each end, so a short token is not shown whole either.
        return "\(token.prefix(min(6, token.count / 4)))…\(token.suffix(min(4, token.count / 4)))"
    }

    // MARK: - Audit

    struct AuditRow: Sendable {
        var at: String
        var who: String
        var action: String
        var app: String
        var subject: String
        var link: String?
        var details: String?
        var reason: String
    }

    struct AuditPageView: Sendable {
        var session: SessionView
        var apps: [AppOption]
        var allAppsLabel: String
        var since: String
        var entries: [AuditRow]
        var error: String?
        var next: String?
    }

    func audit(_ request: Request, _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        try signedIn.caller.require(.read)
        let parameters = request.uri.queryParameters
        let apps = try await visibleApps(signedIn)
        let chosen = parameters.get("app").flatMap { $0.isEmpty ? nil : $0 }
        var session = SessionView(signedIn)
        session.onAudit = true
        var view = AuditPageView(
            session: session, apps: apps.map { AppOption(name: $0.name, selected: $0.name == chosen) },
            allAppsLabel: signedIn.caller.isForAllApps ? "Everything" : "All my apps", since: parameters.get("since") ?? "", entries: [])
        do {
            var query = AuditQuery(appIDs: signedIn.caller.isForAllApps ? nil : Set(apps.map(\.id)), limit: Self.pageSize)
            if let chosen { query.appIDs = [try await app(named: chosen, signedIn).id] }
            if let text = parameters.get("since"), !text.isEmpty { query.since = try Self.inputTime(text, field: "Since") }
            if let text = parameters.get("cursor"), !text.isEmpty { query.cursor = try AuditCursor(encoded: text) }
            let found = try await store.auditPage(query)
            let names = Dictionary(uniqueKeysWithValues: apps.map { ($0.id, $0.name) })
            view.entries = found.entries.map { entry in
                let isRetraction = entry.action == "retraction.created"
                var notes: [String] = []
                if entry.details["dryRun"] == "true" { notes.append("dry run") }
                if let devices = entry.details["devices"] { notes.append("\(devices) devices") }
                if let mode = entry.details["mode"] { notes.append(mode) }
                return AuditRow(
                    at: ConsoleTime.text(entry.at), who: entry.keyName ?? entry.actor, action: entry.action,
                    app: entry.appID.flatMap { names[$0] } ?? entry.appName ?? "",
                    subject: isRetraction
                        ? (entry.details["references"] ?? entry.details["selector"] ?? entry.subject ?? "") : entry.subject ?? "",
                    link: isRetraction ? entry.subject.map { "/console/retractions/\($0)" } : nil,
                    details: notes.isEmpty ? nil : notes.joined(separator: " · "), reason: entry.details["reason"] ?? "")
            }
            view.next = found.next.map { Self.nextPage("/console/audit", parameters, cursor: $0.encoded) }
        } catch {
            view.error = try Self.searchProblem(error)
        }
        return pages.render("audit", view)
    }

    // MARK: - Searching

    /// What a search's own inputs got wrong, shown above its results; any other error is the page's.
    static func searchProblem(_ error: any Error) throws -> String {
        switch error {
        case let problem as APIProblem where problem.status.code < 500: return problem.detail
        case let error as StoreError where error.code == .invalidInput: return error.message
        default: throw error
        }
    }

    /// The same search, from `cursor` on.
    static func nextPage(_ path: String, _ parameters: Parameters, cursor: String) -> String {
        var items = parameters.map { (String($0.key), String($0.value)) }.filter { $0.0 != "cursor" }
        items.append(("cursor", cursor))
        return path + "?" + items.map { "\(percentEncoded($0.0))=\(percentEncoded($0.1))" }.joined(separator: "&")
    }
}
