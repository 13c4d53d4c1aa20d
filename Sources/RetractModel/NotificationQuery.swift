import Foundation
import RetractKit

/// What to list of the notifications the ledger holds: a notification is
/// an app's reference, over every device it was delivered to.
package struct NotificationQuery: Hashable, Sendable {
    /// Only notifications of these apps; nil for every app.
    package var appIDs: Set<Int64>?
    /// Only this reference (an exact match).
    package var reference: String?
    /// Only notifications last sent at or after this time.
    package var sentAfter: Date?
    /// Only notifications last sent before this time.
    package var sentBefore: Date?
    /// Only notifications of this conversation.
    package var thread: String?
    /// Only notifications of this campaign.
    package var campaign: String?
    /// Notifications a page holds, 1 to ``maximumLimit``.
    package var limit: Int
    /// Where the previous page ended; nil for the most recent notifications.
    package var cursor: NotificationCursor?

    package init(
        appIDs: Set<Int64>? = nil, reference: String? = nil, sentAfter: Date? = nil, sentBefore: Date? = nil, thread: String? = nil,
        campaign: String? = nil, limit: Int = 50, cursor: NotificationCursor? = nil
    ) {
        self.appIDs = appIDs
        self.reference = reference
        self.sentAfter = sentAfter
        self.sentBefore = sentBefore
        self.thread = thread
        self.campaign = campaign
        self.limit = limit
        self.cursor = cursor
    }

    package static let maximumLimit = 200

    /// What is wrong with the query, as (field, problem), or nil.
    package var problem: (field: String, problem: String)? {
        if !(1...Self.maximumLimit).contains(limit) { return ("limit", "\(limit); a page holds 1 to \(Self.maximumLimit) notifications") }
        if let reference {
            do throws(FieldProblem) { _ = try ReferenceID(validating: reference) } catch { return ("reference", error.message) }
        }
        if let sentAfter, let sentBefore, sentAfter >= sentBefore {
            return ("sentAfter", "not before sentBefore; nothing was sent in between")
        }
        for (field, value) in [("thread", thread), ("campaign", campaign)] {
            if let value, let problem = DeliveryLabels.problem(with: value) { return (field, problem) }
        }
        return nil
    }
}

/// Where a page of notifications ended: after this one, in the order
/// most recently sent first, then by reference and app. Travels as an
/// opaque string (``encoded``).
package struct NotificationCursor: Hashable, Sendable {
    /// Its last send time in microseconds since 1970, PostgreSQL's precision.
    package var microseconds: Int64
    package var reference: String
    package var appID: Int64

    package init(microseconds: Int64, reference: String, appID: Int64) {
        self.microseconds = microseconds
        self.reference = reference
        self.appID = appID
    }

    /// `n1.<microseconds>.<app id>.<reference>`, base64url without padding.
    package var encoded: String { OpaqueCursor.encode(["n1", "\(microseconds)", "\(appID)", reference]) }

    /// Reads a cursor made by ``encoded``.
    /// - Throws: ``StoreError/Code/invalidInput`` saying what is wrong with it.
    package init(encoded: String) throws(StoreError) {
        // The reference may hold dots: it is all that follows the third.
        let parts = try OpaqueCursor.fields(of: encoded, tag: "n1", count: 4, of: "notifications", maximumLength: 512)
        guard let microseconds = Int64(parts[1]), let appID = Int64(parts[2]), !parts[3].isEmpty else {
            throw OpaqueCursor.invalid(encoded, of: "notifications")
        }
        self.init(microseconds: microseconds, reference: String(parts[3]), appID: appID)
    }
}

/// A retraction that takes a notification, in brief.
package struct RetractionBrief: Hashable, Sendable {
    package var id: UUID
    package var state: Retraction.State
    package var mode: RetractionMode
    package var dryRun: Bool
    package var createdAt: Date
    package var requestedBy: String
    package var reason: String?
    /// What it selects by (`thread "c-1"`), nil for a retraction of references.
    package var selector: String?
    /// Whether it is an edit (`POST /v1/edits`): the notification got new text, and was not removed.
    package var isEdit: Bool

    package init(
        id: UUID, state: Retraction.State, mode: RetractionMode, dryRun: Bool, createdAt: Date, requestedBy: String, reason: String?,
        selector: String?, isEdit: Bool = false
    ) {
        self.id = id
        self.state = state
        self.mode = mode
        self.dryRun = dryRun
        self.createdAt = createdAt
        self.requestedBy = requestedBy
        self.reason = reason
        self.selector = selector
        self.isEdit = isEdit
    }
}

/// One notification: an app's reference over all of its deliveries.
package struct NotificationSummary: Hashable, Sendable {
    package var appID: Int64
    package var appName: String
    package var reference: String
    /// Distinct device tokens.
    package var devices: Int
    /// Of those, tokens the app's push service said are dead.
    package var deadDevices: Int
    package var firstSentAt: Date
    package var lastSentAt: Date
    /// The conversation its deliveries carry; if they carry several, the
    /// first recorded.
    package var thread: String?
    /// The campaign, chosen the same way.
    package var campaign: String?
    /// Retractions that take it, oldest first: those naming the reference
    /// (dry runs included), and those by selector whose label and range
    /// take one of its deliveries (dry runs not included).
    package var retractions: [RetractionBrief]

    package init(
        appID: Int64, appName: String, reference: String, devices: Int, deadDevices: Int, firstSentAt: Date, lastSentAt: Date,
        thread: String?, campaign: String?, retractions: [RetractionBrief]
    ) {
        self.appID = appID
        self.appName = appName
        self.reference = reference
        self.devices = devices
        self.deadDevices = deadDevices
        self.firstSentAt = firstSentAt
        self.lastSentAt = lastSentAt
        self.thread = thread
        self.campaign = campaign
        self.retractions = retractions
    }
}

/// A page of notifications and where the next one starts.
package struct NotificationPage: Hashable, Sendable {
    package var notifications: [NotificationSummary]
    /// Nil on the last page.
    package var next: NotificationCursor?

    package init(notifications: [NotificationSummary], next: NotificationCursor?) {
        self.notifications = notifications
        self.next = next
    }
}

/// A notification and the devices it reached.
package struct NotificationDetail: Hashable, Sendable {
    /// One device the notification reached.
    package struct Device: Hashable, Sendable {
        package var token: DeviceToken
        package var transport: PushService
        /// Its latest delivery of the notification.
        package var sentAt: Date
        /// Set when the app's push service said the token is dead.
        package var dead: DeadToken?

        package init(token: DeviceToken, transport: PushService, sentAt: Date, dead: DeadToken?) {
            self.token = token
            self.transport = transport
            self.sentAt = sentAt
            self.dead = dead
        }
    }

    /// Over every delivery of the notification.
    package var summary: NotificationSummary
    /// In token order, at most the limit asked for.
    package var devices: [Device]

    package init(summary: NotificationSummary, devices: [Device]) {
        self.summary = summary
        self.devices = devices
    }
}
