/// A notification showing in Notification Center, as matching sees it.
public struct DeliveredNotification: Hashable, Sendable {
    /// The request identifier; equal to `apns-collapse-id` when the original set one.
    public var identifier: String
    /// The reference in the notification's custom data, if it has one.
    public var referenceID: ReferenceID?
    /// Further references the notification stands for, such as the messages
    /// a summary ("3 new messages") was sent for.
    public var referenceIDs: [ReferenceID]

    public init(identifier: String, referenceID: ReferenceID? = nil, referenceIDs: [ReferenceID] = []) {
        self.identifier = identifier
        self.referenceID = referenceID
        self.referenceIDs = referenceIDs
    }

    /// Reads the references from the notification's `userInfo`, as a
    /// retraction's are read (both custom data keys, or the top level); a
    /// value that cannot be read is left out, and a notification without
    /// references is matchable by identifier only.
    public init(identifier: String, userInfo: [AnyHashable: Any]) {
        let customData = RetractPayload.read(userInfo).customData
        self.init(identifier: identifier, referenceID: customData?.referenceID, referenceIDs: customData?.referenceIDs ?? [])
    }

    /// Whether a retraction of `references` removes this notification: one of
    /// its references is among them, or its identifier is.
    public func isRetracted(by references: Set<ReferenceID>) -> Bool {
        if let referenceID, references.contains(referenceID) { return true }
        if referenceIDs.contains(where: references.contains) { return true }
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
