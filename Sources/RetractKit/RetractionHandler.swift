/// Applies retraction pushes to Notification Center: the one call an app makes
/// from `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
///
/// ```swift
/// let handler = RetractionHandler(center: SystemNotificationCenter())
/// let outcome = await handler.handle(userInfo: userInfo)
/// ```
public struct RetractionHandler: Sendable {
    private let center: any DeliveredNotificationCenter
    private let tombstones: Tombstones?

    /// - Parameter tombstones: where retracted references are remembered, so a
    ///   Notification Service Extension can drop an original that arrives after
    ///   its retraction.
    public init(center: some DeliveredNotificationCenter, tombstones: Tombstones? = nil) {
        self.center = center
        self.tombstones = tombstones
    }

    /// Removes the delivered notifications a retraction push names.
    ///
    /// Runs on the caller's actor, so `userInfo` never crosses an isolation
    /// boundary.
    public func handle(
        userInfo: [AnyHashable: Any],
        isolation: isolated (any Actor)? = #isolation
    ) async -> RetractionOutcome {
        guard let references = RetractPayload.retraction(in: userInfo) else { return .notARetraction }
        return await retract(references)
    }

    /// Removes the delivered notifications that carry, or are identified by,
    /// one of `references`.
    public func retract(_ references: Set<ReferenceID>) async -> RetractionOutcome {
        // A tombstone that cannot be saved only costs the late-original check;
        // the removal itself must still happen.
        try? tombstones?.record(references)
        let identifiers = await center.deliveredNotifications().identifiers(retractedBy: references)
        guard !identifiers.isEmpty else { return .noMatch }
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
        return .removed(identifiers)
    }

    /// The completion-handler form for app delegate callbacks: `completion` is
    /// called exactly once, on the main actor, whatever the push holds.
    @MainActor
    public func handle(userInfo: [AnyHashable: Any], completion: @escaping @MainActor (RetractionOutcome) -> Void) {
        guard let references = RetractPayload.retraction(in: userInfo) else {
            completion(.notARetraction)
            return
        }
        Task { completion(await retract(references)) }
    }
}
