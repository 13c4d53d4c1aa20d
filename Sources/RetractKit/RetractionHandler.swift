import Foundation

/// Applies retraction pushes to Notification Center: the one call an app makes
/// from `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
///
/// ```swift
/// let handler = RetractionHandler(center: SystemNotificationCenter())
/// let outcome = await handler.handle(userInfo: userInfo)
/// ```
public struct RetractionHandler: Sendable {
    /// Seconds a removal is awaited before it is reported
    /// ``RetractionOutcome/notConfirmed(_:)``. Well inside what iOS gives an
    /// app for a background push (about 30) and an extension for each push.
    public static let defaultRemovalWait: TimeInterval = 2

    private let center: any DeliveredNotificationCenter
    private let tombstones: Tombstones?
    private let catchUp: RetractionServiceExtension.FeedCatchUp?
    private let removalWait: TimeInterval

    /// - Parameters:
    ///   - tombstones: where retracted references are remembered, so a
    ///     Notification Service Extension can drop an original that arrives
    ///     after its retraction.
    ///   - catchUp: the device feed, read when a push says the rest of what
    ///     to remove is there (``NotificationCustomData/moreInFeed``): a
    ///     retraction whose references needed several pushes, of which iOS
    ///     may hand a suspended app only the last. Nil reads nothing.
    ///   - removalWait: seconds to wait for Notification Center to stop
    ///     listing what was removed (see ``retract(_:threads:)``).
    public init(
        center: some DeliveredNotificationCenter, tombstones: Tombstones? = nil,
        catchUp: RetractionServiceExtension.FeedCatchUp? = nil,
        removalWait: TimeInterval = RetractionHandler.defaultRemovalWait
    ) {
        self.center = center
        self.tombstones = tombstones
        self.catchUp = catchUp
        self.removalWait = removalWait
    }

    /// Removes the delivered notifications a retraction push names.
    ///
    /// Runs on the caller's actor, so `userInfo` never crosses an isolation
    /// boundary.
    public func handle(
        userInfo: [AnyHashable: Any],
        isolation: isolated (any Actor)? = #isolation
    ) async -> RetractionOutcome {
        await handle(RetractPayload.read(userInfo)).outcome
    }

    /// Removes the delivered notifications a push read by
    /// ``RetractPayload/read(_:)`` names, and says what it could not read:
    ///
    /// ```swift
    /// let report = await handler.handle(RetractPayload.read(userInfo))
    /// for problem in report.diagnostics { logger.warning("retraction push: \(problem)") }
    /// ```
    public func handle(_ reading: RetractPayload.Reading) async -> RetractionReport {
        guard let references = reading.retraction else {
            var report = RetractionReport(outcome: .notARetraction, diagnostics: reading.diagnostics)
            if let edit = reading.edit { report.edit = await self.edit(edit) }
            return report
        }
        let threads = reading.retractedThreads
        var report = RetractionReport(
            outcome: await retract(references, threads: threads, account: reading.account), references: references, threads: threads,
            account: reading.account, diagnostics: reading.diagnostics)
        if let catchUp, reading.customData?.moreInFeed == true {
            // Without the catch-up handler: a feed read never leads to another.
            let caughtUp = await catchUp.run(handler: RetractionHandler(center: center, tombstones: tombstones))
            if case .caughtUp(let more, _) = caughtUp, !more.identifiers.isEmpty {
                report.outcome = report.outcome.merged(with: more)
            }
            report.catchUp = caughtUp
        }
        return report
    }

    /// Removes the delivered notifications that carry, or are identified by,
    /// one of `references`, and those in one of `threads`, of `account` (nil:
    /// the app's only account; see
    /// ``DeliveredNotification/isRetracted(by:threads:account:)``).
    ///
    /// References are remembered as tombstones; threads are not: a
    /// conversation retracted goes on, and its next messages must show.
    ///
    /// Returns once Notification Center no longer lists what was removed, or
    /// after the removal wait: iOS removes on a queue of its own, with no
    /// completion, and drops the work when the process ends first, which it
    /// does soon after an extension calls its content handler or an app its
    /// fetch completion handler. Call those only after this returns.
    public func retract(_ references: Set<ReferenceID>, threads: Set<String> = [], account: String? = nil) async -> RetractionOutcome {
        // A tombstone that cannot be saved only costs the late-original check;
        // the removal itself must still happen.
        if !references.isEmpty { try? tombstones?.record(references, account: account) }
        let identifiers = await center.deliveredNotifications().identifiers(
            retractedBy: references, threads: threads, account: account)
        guard !identifiers.isEmpty else { return .noMatch }
        return await remove(identifiers)
    }

    /// Removes what `retracted` names, account by account, in one pass over
    /// Notification Center; remembers every reference as a tombstone.
    func retract(_ retracted: RetractedReferences) async -> RetractionOutcome {
        for account in retracted.accounts { try? tombstones?.record(retracted.references(of: account), account: account) }
        var seen = Set<String>()
        let identifiers = await center.deliveredNotifications().filter { retracted.names($0) && seen.insert($0.identifier).inserted }
            .map(\.identifier)
        guard !identifiers.isEmpty else { return .noMatch }
        return await remove(identifiers)
    }

    /// Removes `identifiers`, and returns once Notification Center no longer
    /// lists them, or after the removal wait; records no tombstone.
    func remove(_ identifiers: [String]) async -> RetractionOutcome {
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
        return await awaitRemoval(of: identifiers)
    }

    /// What Notification Center shows now.
    func delivered() async -> [DeliveredNotification] {
        await center.deliveredNotifications()
    }

    /// Shows an edit's text in the delivered notifications of its
    /// references (by their custom data or identifier, never their thread),
    /// each in its place and silently. A notification no longer showing
    /// stays gone: an edit never posts one. A reference retracted on this
    /// device (a tombstone) edits nothing: a deleted message is never shown
    /// again, in any words.
    public func edit(_ edit: RetractPayload.Edit) async -> EditReport {
        if let tombstones, edit.references.contains(where: { tombstones.contains($0, account: edit.account) }) {
            return EditReport(edit: edit, edited: [], wasRetracted: true)
        }
        var edited: [String] = []
        for identifier in await center.deliveredNotifications().identifiers(editedBy: edit.references, account: edit.account)
        where await center.replaceText(ofDelivered: identifier, title: edit.title, body: edit.body) {
            edited.append(identifier)
        }
        return EditReport(edit: edit, edited: edited)
    }

    /// Asks Notification Center until none of `identifiers` is listed, at
    /// growing intervals (10 ms, doubling up to 200 ms), for at most the
    /// removal wait. A cancelled task asks once more and stops.
    private func awaitRemoval(of identifiers: [String]) async -> RetractionOutcome {
        let asked = Set(identifiers)
        let start = DispatchTime.now().uptimeNanoseconds
        let wait = UInt64(max(0, min(removalWait, 3_600)) * 1_000_000_000)
        var pause: UInt64 = 10_000_000
        while true {
            let listed = await center.deliveredNotifications()
            if !listed.contains(where: { asked.contains($0.identifier) }) { return .removed(identifiers) }
            let waited = DispatchTime.now().uptimeNanoseconds - start
            guard waited < wait, !Task.isCancelled else { return .notConfirmed(identifiers) }
            try? await Task.sleep(nanoseconds: min(pause, wait - waited))
            pause = min(pause * 2, 200_000_000)
        }
    }

    /// For an app that handles silent pushes of its own: handles the push
    /// only when it is a retraction.
    ///
    /// - Returns: true when the push is a retraction or an edit
    ///   (``RetractionReport/edit``); `completion` is then called exactly
    ///   once, on the main actor, after the removal or the edit. False when
    ///   it is neither; `completion` is never called, and the push is the
    ///   caller's to handle.
    @MainActor
    public func handleIfRetraction(userInfo: [AnyHashable: Any], completion: @escaping @MainActor (RetractionReport) -> Void) -> Bool {
        let reading = RetractPayload.read(userInfo)
        guard reading.retraction != nil || reading.edit != nil else { return false }
        Task { completion(await handle(reading)) }
        return true
    }

    /// For an app whose only silent pushes are retractions: `completion` is
    /// called exactly once, on the main actor, whatever the push holds. An app
    /// with silent pushes of its own uses
    /// ``handleIfRetraction(userInfo:completion:)``, which leaves other pushes
    /// to it.
    @MainActor
    public func handle(userInfo: [AnyHashable: Any], completion: @escaping @MainActor (RetractionOutcome) -> Void) {
        let reading = RetractPayload.read(userInfo)
        Task { completion(await handle(reading).outcome) }
    }
}
