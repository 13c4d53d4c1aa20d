#if canImport(UserNotifications) && !os(tvOS)
import UserNotifications
#endif

/// What a Notification Service Extension does with each push, in one call
/// from `didReceive(_:withContentHandler:)`:
///
/// ```swift
/// retraction.didReceive(request, withContentHandler: contentHandler)
/// ```
///
/// - A retraction carrier (a push ``RetractPayload/read(_:)`` reads as a
///   retraction) removes the notifications it names and records them as
///   tombstones, through ``RetractionHandler``; then it is suppressed, or shown
///   as it came (its alert is the server's retraction text) when the extension
///   cannot suppress.
/// - An original retracted before it arrived is suppressed, or shown with the
///   retraction text in place of its content.
/// - An edit carrier (a push ``RetractPayload/read(_:)`` reads as an edit)
///   takes the place of its original, with the new text, where the original
///   still shows; where it does not (the user dismissed it), it is
///   suppressed, or shown when the extension cannot suppress. Of a message
///   retracted on this device, it is handled as a late original.
/// - Anything else is shown unchanged.
///
/// Given a ``FeedCatchUp``, it also reads the device feed on each push and
/// removes what the device missed (a retraction sent while it was offline),
/// before deciding: an original the feed names is then treated as retracted.
///
/// iOS runs the extension for alerts sent with `"mutable-content": 1`, even
/// when the user force-quit the app, which silent pushes never reach. The
/// decision is made here, off any Apple framework, so it is tested on every
/// platform; the `UserNotifications` part only turns it into content.
public struct RetractionServiceExtension: Sendable {
    /// What an app's retraction text is when it sets none; the server's default too.
    public static let defaultRetractionText = "This message was deleted"

    /// What to hand back to iOS for one push.
    public enum Decision: Hashable, Sendable {
        /// Show the push as it came.
        case passThrough
        /// Show nothing: empty content, which iOS honours only with the
        /// filtering entitlement.
        case suppress
        /// Show the push with this body, and its title and subtitle cleared,
        /// since they may quote the deleted message. Its custom data stays, so
        /// a later retraction still finds it.
        case replaceBody(String)
        /// Show the push with this body, and this title (nil: the title of
        /// the original it edits): an edit carrier, in its original's place.
        case showEdit(title: String?, body: String)
    }

    /// What the extension did with one push.
    public struct Report: Hashable, Sendable {
        public var decision: Decision
        /// What a retraction carrier removed (``RetractionOutcome/notARetraction``
        /// for any other push), and the values of the push that could not be read.
        public var retraction: RetractionReport
        /// Whether the push is an original that was retracted before it arrived.
        public var wasRetracted: Bool
        /// What reading the device feed did for this push.
        public var catchUp: FeedCatchUp.Outcome

        public init(
            decision: Decision, retraction: RetractionReport, wasRetracted: Bool = false, catchUp: FeedCatchUp.Outcome = .notConfigured
        ) {
            self.decision = decision
            self.retraction = retraction
            self.wasRetracted = wasRetracted
            self.catchUp = catchUp
        }
    }

    private let handler: RetractionHandler
    private let tombstones: Tombstones?
    private let hasFilteringEntitlement: Bool
    private let retractionText: String
    private let catchUp: FeedCatchUp?

    /// - Parameters:
    ///   - center: where the carrier's originals are removed from.
    ///   - tombstones: shared with the app (an app group), so an original
    ///     retracted before it arrived is recognised whichever process saw the
    ///     retraction. Without them, only carriers are handled.
    ///   - hasFilteringEntitlement: whether the extension has
    ///     `com.apple.developer.usernotifications.filtering`. It cannot be
    ///     detected at runtime, and without it iOS ignores empty content, so
    ///     claiming it wrongly would let a late original show its content.
    ///   - retractionText: what a late original shows instead of its content
    ///     when it cannot be suppressed.
    ///   - catchUp: reads the device feed on each push; nil reads nothing.
    public init(
        center: some DeliveredNotificationCenter,
        tombstones: Tombstones?,
        hasFilteringEntitlement: Bool,
        retractionText: String = RetractionServiceExtension.defaultRetractionText,
        catchUp: FeedCatchUp? = nil
    ) {
        self.handler = RetractionHandler(center: center, tombstones: tombstones)
        self.tombstones = tombstones
        self.hasFilteringEntitlement = hasFilteringEntitlement
        self.retractionText = retractionText
        self.catchUp = catchUp
    }

    /// What to show for the push with request identifier `identifier`.
    ///
    /// Runs on the caller's actor, so `userInfo` never crosses an isolation
    /// boundary.
    public func decide(
        identifier: String,
        userInfo: [AnyHashable: Any],
        isolation: isolated (any Actor)? = #isolation
    ) async -> Decision {
        await handle(arrival(identifier: identifier, userInfo: userInfo)).decision
    }

    /// What to show for the push, what it removed and what could not be read.
    ///
    /// Runs on the caller's actor, so `userInfo` never crosses an isolation
    /// boundary.
    public func handle(
        identifier: String,
        userInfo: [AnyHashable: Any],
        isolation: isolated (any Actor)? = #isolation
    ) async -> Report {
        await handle(arrival(identifier: identifier, userInfo: userInfo))
    }

    /// For callbacks, such as a content handler: `completion` is called
    /// exactly once; at once unless the push is a retraction carrier, which
    /// first removes what it names, or a ``FeedCatchUp`` is configured, which
    /// first reads the feed, within its budget. (Should the extension run out
    /// of time before that, iOS shows the push as it came; for a carrier, the
    /// retraction text.)
    public func handle(identifier: String, userInfo: [AnyHashable: Any], completion: @escaping @Sendable (Report) -> Void) {
        let arrival = arrival(identifier: identifier, userInfo: userInfo)
        if catchUp == nil, case .decided(let report, _) = arrival {
            completion(report)
        } else {
            Task { completion(await handle(arrival)) }
        }
    }

    /// A push read into what deciding it needs, all Sendable: `userInfo` is
    /// read here, before anything is awaited.
    private enum Arrival: Sendable {
        /// A retraction carrier: what it removes is yet to be awaited.
        case carrier(RetractPayload.Reading)
        /// An edit carrier, with its identifier (the collapse id of its
        /// original, when the server had one) and what could not be read.
        case editCarrier(RetractPayload.Edit, identifier: String, diagnostics: [RetractPayloadError])
        /// Any other push, decided as it is read from the tombstones; with
        /// the push as matching sees it, should the feed name it.
        case decided(Report, DeliveredNotification)
    }

    private func arrival(identifier: String, userInfo: [AnyHashable: Any]) -> Arrival {
        let reading = RetractPayload.read(userInfo)
        // The carrier test comes first: a carrier's identifier is the collapse
        // id of an original it retracts, so it may look retracted itself.
        if reading.retraction != nil { return .carrier(reading) }
        if let edit = reading.edit { return .editCarrier(edit, identifier: identifier, diagnostics: reading.diagnostics) }
        let retraction = RetractionReport(outcome: .notARetraction, diagnostics: reading.diagnostics)
        let notification = DeliveredNotification(identifier: identifier, userInfo: userInfo)
        guard tombstones?.wasRetracted(notification) == true else {
            return .decided(Report(decision: .passThrough, retraction: retraction), notification)
        }
        return .decided(Report(decision: retractedDecision, retraction: retraction, wasRetracted: true), notification)
    }

    /// What an original retracted before it arrived shows.
    private var retractedDecision: Decision { hasFilteringEntitlement ? .suppress : .replaceBody(retractionText) }

    /// Catches up first, when configured, so that the push is decided
    /// knowing what the feed named.
    private func handle(_ arrival: Arrival) async -> Report {
        let caughtUp = await catchUp?.run(handler: handler) ?? .notConfigured
        var report: Report
        switch arrival {
        case .carrier(let reading):
            report = await handle(carrier: reading)
        case .editCarrier(let edit, let identifier, let diagnostics):
            report = await handle(editCarrier: edit, identifier: identifier, diagnostics: diagnostics)
            if !report.wasRetracted, case .caughtUp(_, let references) = caughtUp,
                references.contains(anyOf: edit.references, account: edit.account)
            {
                report.decision = retractedDecision
                report.wasRetracted = true
            }
        case .decided(let decided, let notification):
            report = decided
            if !report.wasRetracted, case .caughtUp(_, let references) = caughtUp, references.names(notification) {
                report.decision = retractedDecision
                report.wasRetracted = true
            }
        }
        report.catchUp = caughtUp
        return report
    }

    /// Removes and records through the handler, so matching and tombstones
    /// stay in one place; the carrier itself is then suppressed when it can be.
    private func handle(carrier reading: RetractPayload.Reading) async -> Report {
        Report(decision: hasFilteringEntitlement ? .suppress : .passThrough, retraction: await handler.handle(reading))
    }

    /// An edit carrier takes the place of the originals it edits: it shows
    /// the new text under its own identifier (the original's collapse id,
    /// so iOS puts it where the original was), and the originals shown
    /// under another identifier are removed. With none showing, the user
    /// dismissed the message, and the carrier is hidden where it can be.
    private func handle(editCarrier edit: RetractPayload.Edit, identifier: String, diagnostics: [RetractPayloadError]) async -> Report {
        var retraction = RetractionReport(outcome: .notARetraction, diagnostics: diagnostics)
        if let tombstones, edit.references.contains(where: { tombstones.contains($0, account: edit.account) }) {
            retraction.edit = EditReport(edit: edit, edited: [], wasRetracted: true)
            return Report(decision: retractedDecision, retraction: retraction, wasRetracted: true)
        }
        let shown = await handler.delivered().filter { $0.isEdited(by: edit.references, account: edit.account) }
        retraction.edit = EditReport(edit: edit, edited: shown.map(\.identifier))
        guard !shown.isEmpty else {
            return Report(decision: hasFilteringEntitlement ? .suppress : .passThrough, retraction: retraction)
        }
        let elsewhere = shown.map(\.identifier).filter { $0 != identifier }
        if !elsewhere.isEmpty { _ = await handler.remove(elsewhere) }
        return Report(decision: .showEdit(title: edit.title ?? shown.compactMap(\.title).first, body: edit.body), retraction: retraction)
    }
}

// tvOS has no Notification Service Extension, and no title or body to replace.
#if canImport(UserNotifications) && !os(tvOS)
extension RetractionServiceExtension {
    /// For `UNNotificationServiceExtension.didReceive(_:withContentHandler:)`:
    /// calls `contentHandler` exactly once, with empty content (suppress), a
    /// copy with the retraction text, or `request.content`.
    public func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        let pending = PendingContent(request: request, contentHandler: contentHandler)
        handle(identifier: request.identifier, userInfo: request.content.userInfo) { report in pending.deliver(report.decision) }
    }
}

/// What iOS hands to one `didReceive`, carried to the decision.
private struct PendingContent: @unchecked Sendable {
    // @unchecked: iOS takes the content handler on any thread, once; the
    // request is only read.
    let request: UNNotificationRequest
    let contentHandler: (UNNotificationContent) -> Void

    func deliver(_ decision: RetractionServiceExtension.Decision) {
        switch decision {
        case .passThrough:
            contentHandler(request.content)
        case .suppress:
            contentHandler(UNNotificationContent())
        case .replaceBody(let body):
            // A fresh content rather than the original's, should the copy fail.
            let content = request.content.mutableCopy() as? UNMutableNotificationContent ?? UNMutableNotificationContent()
            content.title = ""
            content.subtitle = ""
            content.body = body
            content.quiet()
            contentHandler(content)
        case .showEdit(let title, let body):
            let content = request.content.mutableCopy() as? UNMutableNotificationContent ?? UNMutableNotificationContent()
            if let title { content.title = title }
            content.body = body
            content.quiet()
            contentHandler(content)
        }
    }
}

#endif
