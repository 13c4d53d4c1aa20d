import Foundation
import RetractCore
import RetractModel
import RetractStore

// What each console template shows, ready to print: the templates hold no logic
// beyond sections, and everything they print is escaped.

/// The signed-in key, in the page's bar.
struct SessionView: Sendable {
    var keyName: String
    var scopes: String
    var formToken: String
    var onNotifications = false
    var onAudit = false
    var onRetractMany = false
    /// Whether the key may retract (and cancel).
    var mayRetract: Bool
    /// Whether the key may approve or reject retractions others asked for.
    var mayApprove: Bool
    /// The key's id, to tell its own retractions from others'.
    var keyID: UUID

    init(_ signedIn: ConsoleSessions.SignedIn) {
        keyName = signedIn.caller.key.name
        scopes = signedIn.caller.key.scopes.map(\.rawValue).sorted().joined(separator: ", ")
        formToken = signedIn.formToken
        mayRetract = (try? signedIn.caller.require(.retract)) != nil
        mayApprove = (try? signedIn.caller.require(.approve)) != nil
        keyID = signedIn.caller.key.id
    }
}

struct SignInPage: Sendable {
    var session: SessionView? = nil
    var formToken: String
    var next: String
    var error: String?
    var sessionHours: Int
}

struct ProblemPage: Sendable {
    var session: SessionView?
    var heading: String
    var detail: String
    var back: String
}

struct ConfirmPage: Sendable {
    var session: SessionView
    var app: String
    /// What it takes: the reference, or the selector's kind, value and range.
    var targetLead: String
    var target: String
    var targetRange: String
    /// The fields naming the target, posted again on confirm.
    var targetFields: [ConsoleTarget.Field]
    var reason: String
    var mode: String
    var modeLabel: String
    var devices: Int
    var devicesWord: String
    /// For a selector: the notifications it matched.
    var notifications: String?
    /// When it is over its app's approval threshold: what happens then.
    var needsApproval: String?
    var skipped: Int?
    /// False when it would send nothing: no confirm button then.
    var confirmable: Bool
    var warnings: [String]
    var back: String

    init(_ form: RetractionForm, dryRun retraction: Retraction, warnings: [String], session: SessionView) {
        let sendable = retraction.counts.total - retraction.counts.skipped
        self.session = session
        app = form.app.name
        (targetLead, target, targetRange) = form.target.description
        targetFields = form.target.fields
        reason = form.reason
        mode = form.mode.rawValue
        modeLabel = ConsoleMode.label(form.mode)
        devices = sendable
        devicesWord = sendable == 1 ? "device" : "devices"
        notifications = retraction.referencesMatched.map { $0 == 1 ? "1 notification" : "\($0) notifications" }
        skipped = retraction.counts.skipped > 0 ? retraction.counts.skipped : nil
        if let threshold = form.app.approvalThreshold, retraction.counts.total > threshold {
            needsApproval =
                "This is more than \(form.app.name)'s approval threshold of \(threshold) devices: it will wait, sending nothing, "
                + "until another key with the approve scope approves it (within \(ConsoleProgress.duration(form.app.approvalWindowMinutes * 60)))."
        }
        confirmable = sendable > 0
        self.warnings = warnings
        back = form.target.back(app: form.app.name)
    }
}

/// The delivery modes, as a person reads them.
enum ConsoleMode {
    static func label(_ mode: RetractionMode) -> String {
        switch mode {
        case .background: "background (a silent push the app handles)"
        case .serviceExtension: "service-extension (an alert the app's extension removes; reaches force-quit apps)"
        case .replace: "replace (an alert shown in the original's place)"
        }
    }

    struct Option: Sendable {
        var value: String
        var label: String
        var selected: Bool
    }

    /// The form's choices, the app's own mode first and chosen (named when the app is known).
    static func options(default mode: RetractionMode?) -> [Option] {
        [Option(value: "", label: mode.map { "the app's default: \(label($0))" } ?? "the app's default", selected: true)]
            + RetractionMode.allCases.map { Option(value: $0.rawValue, label: label($0), selected: false) }
    }
}

/// Times as the console prints them: UTC, to the second.
enum ConsoleTime {
    static func text(_ date: Date?) -> String {
        guard let date else { return "" }
        return date.formatted(
            Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false)
                .timeSeparator(.colon).dateTimeSeparator(.space))
    }

    /// The value a `datetime-local` input holds: `2026-11-26T13:45`.
    static func inputValue(_ date: Date?) -> String {
        guard let date else { return "" }
        return String(text(date).prefix(16)).replacingOccurrences(of: " ", with: "T")
    }

    /// A `datetime-local` value (with or without seconds) read as UTC.
    static func parseInput(_ text: String) -> Date? {
        let full = text.count == 16 ? text + ":00Z" : text + "Z"
        return try? Date(full, strategy: .iso8601)
    }
}

enum ConsoleLinks {
    static func notification(app: String, reference: String) -> String {
        "/console/notification?app=\(Console.percentEncoded(app))&reference=\(Console.percentEncoded(reference))"
    }

    /// The retract-many form, filled with these fields (`by`, `value`, `sentAfter`, `sentBefore`).
    static func retractMany(app: String, fields: [ConsoleTarget.Field]) -> String {
        let query = [ConsoleTarget.Field(name: "app", value: app)] + fields.filter { !$0.value.isEmpty }
        return "/console/retract-many?" + query.map { "\($0.name)=\(Console.percentEncoded($0.value))" }.joined(separator: "&")
    }

    /// The form for every notification of `kind` `value`, in the range a list was showing.
    static func retractMany(
        app: String, _ kind: RetractionSelector.Kind, _ value: String, sentAfter: String, sentBefore: String
    ) -> String {
        retractMany(
            app: app,
            fields: [
                .init(name: "by", value: kind.rawValue), .init(name: "value", value: value), .init(name: "sentAfter", value: sentAfter),
                .init(name: "sentBefore", value: sentBefore),
            ])
    }
}

/// A retraction's progress, as the page shows it and the events carry it.
struct ConsoleProgress: Encodable, Equatable, Sendable {
    struct Failure: Encodable, Equatable, Sendable {
        var reason: String
        var count: Int
    }

    var state: String
    var total: Int
    var sent: Int
    var dead: Int
    var failed: Int
    var pending: Int
    /// Devices a cancel left unsent.
    var spared: Int
    var settled: Int
    /// Devices settled per second since sending started.
    var rate: Double?
    var rateText: String
    var etaSeconds: Int?
    var etaText: String
    var line: String
    var failures: [Failure]
    var failure: String?
    var finished: Bool

    init(_ status: RetractionStatus, now: Date = Date()) {
        let retraction = status.retraction
        self.init(
            state: retraction.state, counts: retraction.counts, dryRun: retraction.dryRun, createdAt: retraction.createdAt,
            startedAt: retraction.startedAt, finishedAt: retraction.finishedAt, failure: retraction.failure,
            waitingReason: retraction.waitingReason, failures: status.failures, now: now)
    }

    init(
        state: Retraction.State, counts: RetractionCounts, dryRun: Bool, createdAt: Date, startedAt: Date?, finishedAt: Date?,
        failure: String?, waitingReason: String?, failures: [String: Int], now: Date
    ) {
        self.state = state.rawValue
        total = counts.total
        sent = counts.sent
        dead = counts.dead
        failed = counts.failed
        pending = counts.pending
        spared = counts.spared
        settled = counts.sent + counts.dead + counts.failed + counts.spared
        self.failure = failure
        finished = state.isFinished
        self.failures = failures.map { Failure(reason: $0.key, count: $0.value) }.sorted { ($1.count, $0.reason) < ($0.count, $1.reason) }
        let elapsed = (finishedAt ?? now).timeIntervalSince(startedAt ?? createdAt)
        let sentHere = counts.sent + counts.dead + counts.failed - counts.skipped
        rate = elapsed > 0 && sentHere > 0 && startedAt != nil ? Double(sentHere) / elapsed : nil
        rateText = rate.map { "\(Int($0.rounded())) devices/s" } ?? "–"
        if !finished, pending > 0, let rate, rate > 0 {
            etaSeconds = Int((Double(pending) / rate).rounded(.up))
        }
        etaText = finished ? "done" : etaSeconds.map(Self.duration) ?? "–"
        if dryRun {
            line = "A dry run: \(total) devices counted, nothing sent."
        } else if state == .awaitingApproval {
            line = "Awaiting approval: nothing is sent until another key approves it."
        } else if state == .rejected {
            line = "Rejected: nothing was sent."
        } else if state == .expired {
            line = "Expired: no one approved it in time; nothing was sent."
        } else if state == .cancelled {
            line = "Cancelled: \(sent) sent before the cancel, \(spared) spared, \(dead) dead, \(failed) failed of \(total)."
        } else if state == .cancelling {
            line = "Cancelling: the pages in flight are finishing; nothing more is queued."
        } else if finished {
            line = "Finished: \(sent) sent, \(dead) dead, \(failed) failed of \(total)."
        } else if counts.waiting > 0, let reason = waitingReason {
            line = "\(counts.waiting) waiting for the push service: \(reason)"
        } else {
            line = "\(settled) of \(total) settled."
        }
    }

    static func duration(_ seconds: Int) -> String {
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \(seconds / 60 % 60) min"
    }
}

struct RetractionPage: Sendable {
    var session: SessionView
    var id: String
    var shortID: String
    var app: String
    var target: String
    var mode: String
    var requestedBy: String
    var reason: String
    var createdAt: String
    var dryRun: Bool
    var live: Bool
    /// The cancel form, for a key that may retract, while it runs.
    var cancellable: Bool
    /// Who cancelled it and why, once cancelled.
    var cancelled: String?
    /// Its approval, as a sentence, when its app wanted one.
    var approval: String?
    /// The approve and reject forms: awaiting approval, for a key with the
    /// approve scope that did not ask for it.
    var decidable: Bool
    var progress: ConsoleProgress
    var notificationLink: String?
    /// What its completion webhook did, when its app has one and it has ended.
    var webhook: String?

    init(_ status: RetractionStatus, app: App, session: SessionView) {
        let retraction = status.retraction
        self.session = session
        id = retraction.id.uuidString.lowercased()
        shortID = String(id.prefix(8))
        self.app = app.name
        if let selector = retraction.selector {
            target = "\(selector.kind.rawValue) \(Console.shownKey(selector.value))"
        } else {
            target = retraction.references.map { Console.shownKey($0.rawValue) }.joined(separator: ", ")
        }
        mode = retraction.mode.rawValue
        requestedBy = retraction.requestedBy
        reason = retraction.reason ?? ""
        createdAt = ConsoleTime.text(retraction.createdAt)
        dryRun = retraction.dryRun
        progress = ConsoleProgress(status)
        // Awaiting approval, it may wait for days: the page does not reload itself over the reviewer's reason.
        live = !progress.finished && retraction.state != .awaitingApproval
        cancellable = live && !dryRun && retraction.state != .cancelling && session.mayRetract
        cancelled = retraction.cancellation.map { "By \($0.by) at \(ConsoleTime.text($0.at)) UTC: \($0.reason)" }
        approval = retraction.approval.map(Self.describe)
        decidable =
            retraction.state == .awaitingApproval && session.mayApprove
            && (retraction.requestedKeyID.map { $0 != session.keyID } ?? true)
        if retraction.selector == nil, retraction.references.count == 1, let only = retraction.references.first {
            notificationLink = ConsoleLinks.notification(app: app.name, reference: only.rawValue)
        }
        webhook = status.webhook.map(Self.describe)
    }

    /// An approval, as a sentence.
    static func describe(_ approval: Retraction.Approval) -> String {
        switch approval.state {
        case .awaiting:
            let until = approval.expiresAt.map { " until \(ConsoleTime.text($0)) UTC" } ?? ""
            return "Awaiting approval by another key with the approve scope\(until)."
        case .expired:
            return "Expired at \(ConsoleTime.text(approval.expiresAt)) UTC: no one approved it."
        case .withdrawn:
            return "Withdrawn before anyone approved it."
        case .approved, .rejected:
            let verb = approval.state == .approved ? "Approved" : "Rejected"
            return "\(verb) by \(approval.decidedBy ?? "") at \(ConsoleTime.text(approval.decidedAt)) UTC: \(approval.reason ?? "")"
        }
    }

    /// A completion webhook's delivery, as a sentence.
    static func describe(_ delivery: WebhookDelivery) -> String {
        let url = WebhookURL.redacted(delivery.url)
        let answer = [delivery.lastStatus.map { "HTTP \($0)" }, delivery.lastError].compactMap { $0 }.joined(separator: ": ")
        let last = answer.isEmpty ? "" : "; the last answer: \(answer)"
        let attempts = delivery.attempts == 1 ? "1 attempt" : "\(delivery.attempts) attempts"
        switch delivery.state {
        case .delivered:
            return "Delivered to \(url) at \(ConsoleTime.text(delivery.deliveredAt)) UTC after \(attempts)."
        case .gaveUp:
            return "Given up at \(ConsoleTime.text(delivery.gaveUpAt)) UTC after \(attempts) to \(url)\(last)."
        case .retrying:
            let next = delivery.nextAttemptAt.map { ", next at \(ConsoleTime.text($0)) UTC" } ?? ""
            return "Retrying \(url): \(attempts) so far\(last)\(next)."
        case .pending:
            return "Waiting to be sent to \(url)."
        }
    }
}
