/// A notification showing in Notification Center, as matching sees it.
public struct DeliveredNotification: Hashable, Sendable {
    /// The request identifier; equal to `apns-collapse-id` when the original set one.
    public var identifier: String
    /// The reference in the notification's custom data, if it has one.
    public var referenceID: ReferenceID?
    /// Further references the notification stands for, such as the messages
    /// a summary ("3 new messages") was sent for.
    public var referenceIDs: [ReferenceID]
    /// The conversations it belongs to: its request's `threadIdentifier`
    /// (`aps.thread-id`) and the `pushNotificationThreadId` of its custom data.
    public var threadIDs: [String]
    /// What it shows, where the center says: an edit keeps the title when
    /// it brings none.
    public var title: String?
    public var body: String?
    /// The account its custom data names (`pushNotificationAccount`); nil
    /// when it names none, which is the app's only account.
    public var account: String?

    public init(
        identifier: String, referenceID: ReferenceID? = nil, referenceIDs: [ReferenceID] = [], threadIDs: [String] = [],
        title: String? = nil, body: String? = nil, account: String? = nil
    ) {
        self.identifier = identifier
        self.referenceID = referenceID
        self.referenceIDs = referenceIDs
        self.threadIDs = threadIDs
        self.title = title
        self.body = body
        self.account = account
    }

    /// Reads the references from the notification's `userInfo`, as a
    /// retraction's are read (both custom data keys, or the top level), and
    /// its thread from `threadIdentifier` (on a device, the request
    /// content's; else `aps.thread-id`) and the custom data; a value that
    /// cannot be read is left out, and a notification without references is
    /// matchable by identifier only.
    public init(
        identifier: String, userInfo: [AnyHashable: Any], threadIdentifier: String? = nil, title: String? = nil, body: String? = nil
    ) {
        let customData = RetractPayload.read(userInfo).customData
        let apsThread = (userInfo["aps"] as? [AnyHashable: Any])?["thread-id"] as? String
        let threads = [threadIdentifier ?? apsThread, customData?.threadID].compactMap { $0 }.filter { !$0.isEmpty }
        self.init(
            identifier: identifier, referenceID: customData?.referenceID, referenceIDs: customData?.referenceIDs ?? [],
            threadIDs: Array(Set(threads)).sorted(), title: title, body: body, account: customData?.account)
    }

    /// A notification showing on an Android phone, as RetractKit for Android
    /// (clients/android) matches it: its tag stands for a reference (Retract
    /// tags an original with its reference, as the collapse id is an
    /// iPhone's identifier), its extras are read as a push's `userInfo`, and
    /// its group is its conversation. The identifier is the name the library
    /// lists it by (``androidName(tag:id:)``). For tools that check both
    /// clients against the same cases, such as `retract match`.
    package init(androidTag tag: String?, id: Int, extras: [AnyHashable: Any], group: String?) {
        self.init(identifier: Self.androidName(tag: tag, id: id), userInfo: extras, threadIdentifier: group)
        if let tag, !tag.isEmpty {
            let reference = ReferenceID(tag)
            if referenceID != reference, !referenceIDs.contains(reference) { referenceIDs.append(reference) }
        }
    }

    /// How an Android notification is named in lists: its tag; `tag#id` when
    /// the id is not 0; `#id` without a tag.
    package static func androidName(tag: String?, id: Int) -> String {
        guard let tag else { return "#\(id)" }
        return id == 0 ? tag : "\(tag)#\(id)"
    }

    /// Whether an edit of `references` of `account` changes this
    /// notification: one of its references is among them, or its identifier
    /// is, as for a retraction. Never by its thread: an edit is of one
    /// message, not of its conversation.
    public func isEdited(by references: Set<ReferenceID>, account: String? = nil) -> Bool {
        isRetracted(by: references, account: account)
    }

    /// Whether a retraction of `references` and `threads` of `account` (nil:
    /// the app's only account) removes this notification.
    ///
    /// A notification whose custom data names an account is that account's:
    /// only a retraction of the same account removes it, by its references,
    /// its threads or its identifier, as the account's references and
    /// threads or as their ``AccountScope`` identifiers. One that names no
    /// account is the app's only account's for a retraction without one
    /// (its references, threads or identifier among the retraction's, as
    /// ever); a retraction of an account finds it by its system identifiers
    /// alone (its identifier, the Android tag, its thread identifier or
    /// group), when they are the account's ``AccountScope`` identifiers: an
    /// original shown without its custom data (Firebase shows a
    /// notification message so).
    public func isRetracted(by references: Set<ReferenceID>, threads: Set<String> = [], account: String? = nil) -> Bool {
        if let own = self.account, own != account { return false }
        if let account {
            let scoped =
                references.contains { AccountScope.identifier(of: $0, account: account) == identifier }
                || threads.contains { threadIDs.contains(AccountScope.identifier(of: $0, account: account)) }
            if scoped || self.account == nil { return scoped }
        }
        if let referenceID, references.contains(referenceID) { return true }
        if referenceIDs.contains(where: references.contains) { return true }
        if threadIDs.contains(where: threads.contains) { return true }
        return references.contains(ReferenceID(identifier))
    }
}

extension Sequence<DeliveredNotification> {
    /// The identifiers an edit of `references` of `account` changes, in delivery order, each once.
    public func identifiers(editedBy references: Set<ReferenceID>, account: String? = nil) -> [String] {
        identifiers(retractedBy: references, account: account)
    }

    /// The identifiers a retraction of `references` and `threads` of
    /// `account` removes, in delivery order, each once.
    public func identifiers(retractedBy references: Set<ReferenceID>, threads: Set<String> = [], account: String? = nil) -> [String] {
        var seen = Set<String>()
        return filter { $0.isRetracted(by: references, threads: threads, account: account) && seen.insert($0.identifier).inserted }
            .map(\.identifier)
    }
}
