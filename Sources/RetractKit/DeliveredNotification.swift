/// A notification showing in Notification Center, as matching sees it.
public struct DeliveredNotification: Hashable, Sendable {
    /// The request identifier; equal to `apns-collapse-id` when the original set one.
    public var identifier: String
    /// The reference in the notification's custom data, if it has one.
    public var referenceID: ReferenceID?

    public init(identifier: String, referenceID: ReferenceID? = nil) {
        self.identifier = identifier
        self.referenceID = referenceID
    }

    /// Reads the reference from the notification's `userInfo`. Only the
    /// reference keys are read; when they cannot be, the notification is
    /// matchable by identifier only.
    public init(identifier: String, userInfo: [AnyHashable: Any]) {
        self.init(identifier: identifier, referenceID: NotificationCustomData.originalReference(in: userInfo))
    }

    /// Whether a retraction of `references` removes this notification: its
    /// reference is one of them, or its identifier equals one.
    public func isRetracted(by references: Set<ReferenceID>) -> Bool {
        if let referenceID, references.contains(referenceID) { return true }
        return references.contains(ReferenceID(identifier))
    }
}

extension Sequence<DeliveredNotification> {
    /// The identifiers a retraction of `references` removes, in delivery order,
    /// each once.
    public func identifiers(retractedBy references: Set<ReferenceID>) -> [String] {
        var seen = Set<String>()
        return filter { $0.isRetracted(by: references) && seen.insert($0.identifier).inserted }.map(\.identifier)
    }
}
