import Foundation
import RetractCore
import RetractModel
import RetractStore

/// A page of `GET /v1/notifications`.
struct NotificationsView: Encodable {
    var notifications: [NotificationView]
    /// The cursor of the next page; absent on the last.
    var next: String?
}

struct NotificationView: Encodable {
    var app: String
    /// The account it is of, when one: its reference and labels are that account's.
    var account: String?
    var reference: String
    var devices: Int
    var deadDevices: Int
    var firstSentAt: Date
    var lastSentAt: Date
    var thread: String?
    var campaign: String?
    var retractions: [RetractionBriefView]

    init(_ summary: NotificationSummary) {
        app = summary.appName
        (account, reference) = LedgerScope.split(summary.reference)
        devices = summary.devices
        deadDevices = summary.deadDevices
        firstSentAt = summary.firstSentAt
        lastSentAt = summary.lastSentAt
        thread = summary.thread.map(LedgerScope.value)
        campaign = summary.campaign.map(LedgerScope.value)
        retractions = summary.retractions.map(RetractionBriefView.init)
    }
}

struct RetractionBriefView: Encodable {
    var id: String
    var state: String
    var mode: String
    var dryRun: Bool
    var createdAt: Date
    var requestedBy: String
    var reason: String?
    var selector: String?
    /// True for an edit, which gave the notification new text and did not remove it; absent otherwise.
    var edit: Bool?

    init(_ brief: RetractionBrief) {
        id = brief.id.uuidString.lowercased()
        state = brief.state.rawValue
        mode = brief.mode.rawValue
        dryRun = brief.dryRun
        createdAt = brief.createdAt
        requestedBy = brief.requestedBy
        reason = brief.reason
        selector = brief.selector
        edit = brief.isEdit ? true : nil
    }
}

/// A page of `GET /v1/audit`.
struct AuditView: Encodable {
    var entries: [AuditEntryView]
    /// The cursor of the next page; absent on the last.
    var next: String?
}

/// An audit entry as the API and `retract audit --json` show it.
package struct AuditEntryView: Encodable, Sendable {
    package var at: Date?
    package var actor: String
    /// The API key's name, when an API key did it.
    package var keyName: String?
    package var action: String
    /// The app's name; absent for an entry of no app.
    package var app: String?
    package var subject: String?
    package var reason: String?
    package var details: [String: String]

    package init(_ entry: AuditEntry) {
        at = entry.at
        actor = entry.actor
        keyName = entry.keyName
        action = entry.action
        app = entry.appName
        subject = entry.subject
        reason = entry.reason
        details = entry.details
        // A webhook's URL may carry the receiver's secret in its query.
        if let url = details["url"] { details["url"] = WebhookURL.redacted(url) }
    }
}
