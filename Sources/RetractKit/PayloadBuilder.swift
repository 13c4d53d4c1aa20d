import Foundation

/// Builds what Retract sends: the custom data of an original notification and
/// the bodies of retraction pushes, in one ``PayloadDialect``.
///
/// A retraction body is the custom data with the removal flag, and an `aps`
/// that says how the push reaches the phone (``RetractionAPS``): in the
/// default, background mode,
/// ```json
/// {"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"msg-8812","isReferredNotificationMustRemoved":true}}
/// ```
public struct PayloadBuilder: Hashable, Sendable {
    /// APNs answers `413 PayloadTooLarge` to anything larger.
    public static let maximumBodySize = 4096

    public var dialect: PayloadDialect
    /// The account every body names (`pushNotificationAccount`), where one
    /// app on a phone holds several; nil names none: the app's only account.
    public var account: String?

    /// The app icon's badge each retraction body carries in its custom data
    /// (`pushNotificationBadge`), as a read's push does with the count the
    /// backend gives; nil carries none.
    public var badge: Int?

    public init(dialect: PayloadDialect = .canonical, account: String? = nil) {
        self.dialect = dialect
        self.account = account
    }

    /// A builder whose retraction bodies also carry `badge` (a read's).
    public init(dialect: PayloadDialect, account: String?, badge: Int?) {
        self.init(dialect: dialect, account: account)
        self.badge = badge
    }

    /// `"pushNotificationAccount":"…",` first in each custom data object, or nothing.
    private var accountField: String {
        account.map { JSONText.quoted(PayloadDialect.accountKey) + ":" + JSONText.quoted($0) + "," } ?? ""
    }

    /// `"pushNotificationBadge":N,` after the account in a retraction body's custom data, or nothing.
    private var badgeField: String {
        badge.map { JSONText.quoted(PayloadDialect.badgeKey) + ":" + String($0) + "," } ?? ""
    }

    /// The start of a body: `aps`, then the custom data's key and its account.
    fileprivate func head(_ aps: RetractionAPS) -> String {
        #"{"aps":"# + aps.json + "," + JSONText.quoted(dialect.customDataKey) + ":{" + accountField + badgeField
    }

    // MARK: - Originals

    /// The custom data object an original carries, such as
    /// `{"pushNotificationReferenceId":"msg-8812"}` (with the account first, when the builder has one).
    public func originalCustomData(for reference: ReferenceID) throws -> Data {
        Data(
            Array("{\(accountField)\(JSONText.quoted(dialect.referenceIDKey)):".utf8) + (try encodedReference(reference))
                + [UInt8(ascii: "}")])
    }

    /// `payload` (a JSON object, the notification as the caller wrote it) with
    /// the reference written into its custom data. Other keys of existing custom
    /// data are kept; an existing reference is replaced.
    ///
    /// With `thread`, the notification's `aps.thread-id` is the thread (iOS
    /// groups the conversation's notifications by it, and a retraction by
    /// thread finds them by it) and, in the canonical dialect, so is
    /// `pushNotificationThreadId` in the custom data, for Android apps, which
    /// see no `aps`. A payload whose `aps.thread-id` is another thread is
    /// refused. With an ``account``, the custom data names it, and
    /// `aps.thread-id` is the thread's ``AccountScope`` identifier, so that
    /// iOS does not group two accounts' conversations of the same id as one.
    public func originalPayload(_ payload: Data, reference: ReferenceID, thread: String? = nil) throws -> Data {
        guard var object = (try? JSONSerialization.jsonObject(with: payload)) as? [String: Any] else {
            throw RetractPayloadError.invalidJSON(key: "payload", reason: "the payload must be a JSON object")
        }
        if let thread {
            var aps = object["aps"] as? [String: Any] ?? [:]
            let threadID = AccountScope.identifier(of: thread, account: account)
            if let existing = aps["thread-id"], (existing as? String) != threadID {
                throw RetractPayloadError.invalidValue(
                    key: "aps.thread-id", reason: "the payload's thread-id is \(existing), not the notification's thread \"\(threadID)\"")
            }
            aps["thread-id"] = threadID
            object["aps"] = aps
        }
        for other in PayloadDialect.allCases where other != dialect && object[other.customDataKey] != nil {
            throw RetractPayloadError.invalidValue(
                key: other.customDataKey,
                reason: "this app writes custom data under \(dialect.customDataKey); move it there"
            )
        }
        var customData: [String: Any] = [:]
        if let existing = object[dialect.customDataKey], !(existing is NSNull) {
            let parsed = try NotificationCustomData(userInfoValue: existing, path: dialect.customDataKey)
            guard !parsed.mustRemoveReferred else {
                throw RetractPayloadError.invalidValue(
                    key: "\(dialect.customDataKey).\(dialect.mustRemoveKey)",
                    reason: "an original must not carry the removal flag"
                )
            }
            customData = try JSONSerialization.jsonObject(with: originalCustomData(of: existing)) as? [String: Any] ?? [:]
            // Every spelling of an existing reference goes, so only ours is read; so does an account of the payload's own.
            for key in PayloadDialect.allCases.map(\.referenceIDKey) + [PayloadDialect.referenceIDsKey, PayloadDialect.accountKey] {
                customData[key] = nil
            }
        }
        var ownData = try JSONSerialization.jsonObject(with: originalCustomData(for: reference)) as? [String: Any] ?? [:]
        if let thread, dialect == .canonical { ownData[PayloadDialect.threadIDKey] = thread }
        customData.merge(ownData) { _, own in own }
        object[dialect.customDataKey] = customData
        let body = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        try Self.checkSize(body)
        return body
    }

    /// Existing custom data (an object, or a JSON string or Data holding one) as JSON bytes.
    private func originalCustomData(of existing: Any) throws -> Data {
        switch existing {
        case let data as Data: data
        case let string as String: Data(string.utf8)
        default: try JSONSerialization.data(withJSONObject: existing)
        }
    }

    // MARK: - Retractions

    /// The bodies of the retraction push for one device.
    ///
    /// In the canonical dialect all references go into one body, split into the
    /// fewest bodies that fit when they exceed `limit` (see
    /// docs/payload.md for how the split is found). The legacy
    /// dialect's clients read one reference per push, so it makes one body per
    /// reference. Repeated references are sent once.
    ///
    /// - Parameters:
    ///   - limit: the largest body, ``maximumBodySize`` for APNs; a transport
    ///     that writes the body out larger (FCM) gives a smaller one.
    ///   - aps: how the push reaches the phone: a background push, or an alert.
    ///   - moreInFeed: each body says the rest is in the device feed
    ///     (``PayloadDialect/moreInFeedKey``); canonical dialect only.
    public func retractionBodies(
        for references: some Sequence<ReferenceID>, limit: Int = maximumBodySize, aps: RetractionAPS = .background,
        moreInFeed: Bool = false
    ) throws -> [Data] {
        let packed = try packing(references, limit: limit, aps: aps, moreInFeed: moreInFeed)
        return packed.groups.map { indices in packed.template.body(indices.map { packed.encoded[$0] }) }
    }

    /// The references each of ``retractionBodies(for:limit:aps:)``'s bodies
    /// carries, in the same order.
    public func retractionReferenceGroups(
        for references: some Sequence<ReferenceID>, limit: Int = maximumBodySize, aps: RetractionAPS = .background,
        moreInFeed: Bool = false
    ) throws -> [[ReferenceID]] {
        let packed = try packing(references, limit: limit, aps: aps, moreInFeed: moreInFeed)
        return packed.groups.map { indices in indices.map { packed.unique[$0] } }
    }

    /// What a retraction body names: a reference, or a conversation (thread)
    /// whose every notification goes.
    public enum Retracted: Hashable, Sendable {
        case reference(ReferenceID)
        case thread(String)
    }

    /// One retraction body carrying `references` (which must fit one body)
    /// and then as many of `history`, in its order, as still fit within
    /// `limit`: the references a device's earlier retractions named, newest
    /// first, so that whichever push reaches the phone last removes them all
    /// (docs/payload.md, "Earlier retractions ride along"). It stops at the
    /// first that does not fit. Repeats, and references of `history` this
    /// dialect cannot write, are skipped.
    ///
    /// The legacy dialect's clients read one reference per push, so it
    /// cannot carry history: it throws there.
    public func retractionBody(
        for references: [ReferenceID], addingWhatFitsOf history: [ReferenceID], limit: Int = maximumBodySize,
        aps: RetractionAPS = .background
    ) throws -> (body: Data, historyCarried: Int) {
        try retractionBody(for: references, addingWhatFitsOf: history.map(Retracted.reference), limit: limit, aps: aps)
    }

    /// One retraction body carrying `references` and `threads` (which must
    /// fit one body), then as many of `history` (earlier retractions'
    /// references and threads, newest first) as still fit within `limit`:
    /// references in `pushNotificationReferenceIds`, threads in
    /// `pushNotificationThreadIds`. It stops at the first that does not fit.
    ///
    /// With `moreInFeed`, or when some of `history` is left out, the body
    /// says the rest is in the device feed (``PayloadDialect/moreInFeedKey``),
    /// its bytes counted within `limit`. Canonical dialect only: the legacy
    /// dialect carries one reference per push and no threads, so it throws.
    public func retractionBody(
        for references: [ReferenceID], threads: [String] = [], addingWhatFitsOf history: [Retracted],
        limit: Int = maximumBodySize, aps: RetractionAPS = .background, moreInFeed: Bool = false
    ) throws -> (body: Data, historyCarried: Int) {
        guard dialect == .canonical else {
            throw RetractPayloadError.invalidValue(
                key: dialect.referenceIDKey, reason: "the legacy dialect carries one reference per push, so no earlier ones ride along")
        }
        guard !threads.contains(where: \.isEmpty) else {
            throw RetractPayloadError.invalidValue(key: PayloadDialect.threadIDsKey, reason: "a thread id must not be empty")
        }
        var body = MixedBody(head: head(aps), dialect: dialect)
        var seen = Set<Retracted>()
        for reference in references where seen.insert(.reference(reference)).inserted {
            body.add(.reference(reference), encoded: try encodedReference(reference))
        }
        for thread in threads where seen.insert(.thread(thread)).inserted {
            body.add(.thread(thread), encoded: JSONText.quotedBytes(thread))
        }
        let own = body
        func topUp(_ body: inout MixedBody, marked: Bool) -> Int {
            body.moreInFeed = marked
            var carried = 0
            var added = seen
            for item in history where added.insert(item).inserted {
                let encoded: [UInt8]
                switch item {
                case .reference(let reference):
                    guard let bytes = try? encodedReference(reference) else { continue }
                    encoded = bytes
                case .thread(let thread):
                    guard !thread.isEmpty else { continue }
                    encoded = JSONText.quotedBytes(thread)
                }
                guard body.size(adding: item, encoded: encoded) <= limit else { break }
                body.add(item, encoded: encoded)
                carried += 1
            }
            return carried
        }
        let size = own.size(marked: moreInFeed)
        guard size <= limit else { throw RetractPayloadError.bodyTooLarge(size: size, limit: limit) }
        var full = own
        var carried = topUp(&full, marked: moreInFeed)
        if !moreInFeed, carried < Set(history).subtracting(seen).count, own.size(marked: true) <= limit {
            // Something is left out: the body says so, in room the history gives up.
            full = own
            carried = topUp(&full, marked: true)
        }
        return (full.data, carried)
    }

    /// The references without repeats, each encoded, and which go into each body.
    private func packing(
        _ references: some Sequence<ReferenceID>, limit: Int, aps: RetractionAPS, moreInFeed: Bool = false
    ) throws -> (unique: [ReferenceID], encoded: [[UInt8]], groups: [[Int]], template: RetractionTemplate) {
        var seen = Set<ReferenceID>()
        let unique = references.filter { seen.insert($0).inserted }
        let encoded = try unique.map(encodedReference)
        let marked = moreInFeed && dialect == .canonical
        let template =
            aps == .background && !marked && account == nil && badge == nil
            ? RetractionTemplate.of(dialect) : RetractionTemplate(dialect, head: head(aps), moreInFeed: marked)
        switch dialect {
        case .legacy:
            for reference in encoded { try Self.checkSize(template.body([reference]), limit: limit) }
            return (unique, encoded, encoded.indices.map { [$0] }, template)
        case .canonical:
            let packing = BodyPacking(singleOverhead: template.singleOverhead, batchOverhead: template.batchOverhead, limit: limit)
            return (unique, encoded, try packing.pack(encoded.map(\.count)), template)
        }
    }

    /// The body of a retraction of every notification in `threads` (their
    /// `aps.thread-id`, or `pushNotificationThreadId` in their custom data),
    /// however many messages each holds: one push per device.
    ///
    /// Only the canonical dialect has threads; the legacy dialect's clients
    /// read one reference per push, so a thread is retracted there by its
    /// references (``retractionBodies(for:limit:aps:)``).
    public func threadRetractionBody(
        for threads: [String], limit: Int = maximumBodySize, aps: RetractionAPS = .background
    ) throws -> Data {
        guard dialect == .canonical else {
            throw RetractPayloadError.invalidValue(
                key: PayloadDialect.threadIDsKey, reason: "the legacy dialect cannot carry threads; retract their references instead")
        }
        guard !threads.isEmpty, !threads.contains(where: \.isEmpty) else {
            throw RetractPayloadError.invalidValue(key: PayloadDialect.threadIDsKey, reason: "a thread id must not be empty")
        }
        let list = threads.map(JSONText.quoted).joined(separator: ",")
        let body = Data(
            (head(aps) + JSONText.quoted(PayloadDialect.threadIDsKey)
                + ":[" + list + "]," + JSONText.quoted(dialect.mustRemoveKey) + ":true}}").utf8)
        try Self.checkSize(body, limit: limit)
        return body
    }

    /// The body of an edit of `reference`'s notification: its reference and
    /// the new text (`pushNotificationEdit`), and no removal flag, so a client
    /// that knows no edits reads it as no retraction and removes nothing.
    ///
    /// ```json
    /// {"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"msg-8812","pushNotificationEdit":{"title":"Ada","body":"See you at 9?"}}}
    /// ```
    public func editBody(
        for reference: ReferenceID, edit: NotificationEdit, limit: Int = maximumBodySize, aps: RetractionAPS = .background
    ) throws -> Data {
        let encoded = String(decoding: try encodedReference(reference), as: UTF8.self)
        var text = "{"
        if let title = edit.title { text += #""title":"# + JSONText.quoted(title) + "," }
        text += #""body":"# + JSONText.quoted(edit.body) + "}"
        let body = Data(
            (head(aps) + JSONText.quoted(dialect.referenceIDKey)
                + ":" + encoded + "," + JSONText.quoted(PayloadDialect.editKey) + ":" + text + "}}").utf8)
        try Self.checkSize(body, limit: limit)
        return body
    }

    /// Throws ``RetractPayloadError/bodyTooLarge(size:limit:)`` when `body` is over `limit`.
    public static func checkSize(_ body: Data, limit: Int = maximumBodySize) throws {
        guard body.count <= limit else { throw RetractPayloadError.bodyTooLarge(size: body.count, limit: limit) }
    }

    /// A reference as the dialect writes it: a JSON string, or an integer in the
    /// legacy dialect.
    private func encodedReference(_ reference: ReferenceID) throws -> [UInt8] {
        guard !reference.rawValue.isEmpty else {
            throw RetractPayloadError.invalidValue(key: dialect.referenceIDKey, reason: "a reference must not be empty")
        }
        switch dialect {
        case .canonical:
            var bytes: [UInt8] = []
            JSONText.appendQuoted(reference.rawValue, to: &bytes)
            return bytes
        case .legacy:
            guard let integer = reference.integerValue else { throw RetractPayloadError.referenceNotAnInteger(reference) }
            return Array(String(integer).utf8)
        }
    }
}

/// The `aps` object of a retraction push: how it reaches the phone.
public struct RetractionAPS: Hashable, Sendable {
    /// How an alert carrier (of a retraction, an edit or a read) interrupts
    /// the user on iOS 15 and later (`aps.interruption-level`).
    public enum Interruption: String, Hashable, Sendable, Codable, CaseIterable {
        /// `"interruption-level":"passive"` and `"relevance-score":0`: iOS
        /// adds the notification to the list without lighting the screen or
        /// playing a sound, and ranks it last in the summary. The default: a
        /// deleted or edited message is no news.
        case passive
        /// No `interruption-level`: iOS's default, which lights the screen
        /// as a new message does. Carriers never carry a sound either way.
        case active
    }

    /// The object as JSON.
    public let json: String

    /// `{"content-available":1}`: a background push that wakes the app,
    /// which iOS delivers when it chooses, and never to a force-quit app.
    public static let background = RetractionAPS(json: #"{"content-available":1}"#)

    /// A visible alert showing `text`. With `mutableContent`, iOS first hands
    /// it to the app's Notification Service Extension, even after a
    /// force-quit; `badge` sets the app icon's badge.
    public static func alert(
        _ text: String, mutableContent: Bool = false, badge: Int? = nil, interruption: Interruption = .passive
    ) -> RetractionAPS {
        alert(title: nil, body: text, mutableContent: mutableContent, badge: badge, interruption: interruption)
    }

    /// A visible alert with a title too, shown under `thread` (`thread-id`):
    /// what an edit's alert shows in its original's place. Never with a
    /// sound; passive unless `interruption` says otherwise.
    public static func alert(
        title: String?, body: String, mutableContent: Bool = false, badge: Int? = nil, thread: String? = nil,
        interruption: Interruption = .passive
    ) -> RetractionAPS {
        var json = #"{"alert":{"#
        if let title { json += #""title":"# + JSONText.quoted(title) + "," }
        json += #""body":"# + JSONText.quoted(body) + "}"
        if let badge { json += #","badge":\#(badge)"# }
        if interruption == .passive { json += #","interruption-level":"passive""# }
        if mutableContent { json += #","mutable-content":1"# }
        if interruption == .passive { json += #","relevance-score":0"# }
        if let thread { json += #","thread-id":"# + JSONText.quoted(thread) }
        return RetractionAPS(json: json + "}")
    }

    private init(json: String) {
        self.json = json
    }
}

/// The fixed bytes around the references of a retraction body.
private struct RetractionTemplate {
    var singlePrefix: [UInt8]
    var singleSuffix: [UInt8]
    var batchPrefix: [UInt8]
    var batchSuffix: [UInt8]

    static let canonical = RetractionTemplate(.canonical, head: PayloadBuilder(dialect: .canonical).head(.background))
    static let legacy = RetractionTemplate(.legacy, head: PayloadBuilder(dialect: .legacy).head(.background))

    static func of(_ dialect: PayloadDialect) -> RetractionTemplate {
        switch dialect {
        case .canonical: canonical
        case .legacy: legacy
        }
    }

    /// - Parameter head: what comes before the references (``PayloadBuilder``'s `head(_:)`).
    init(_ dialect: PayloadDialect, head: String, moreInFeed: Bool = false) {
        let more = moreInFeed ? "," + JSONText.quoted(PayloadDialect.moreInFeedKey) + ":true" : ""
        let flag = more + "," + JSONText.quoted(dialect.mustRemoveKey) + ":true}}"
        singlePrefix = Array((head + JSONText.quoted(dialect.referenceIDKey) + ":").utf8)
        singleSuffix = Array(flag.utf8)
        batchPrefix = Array((head + JSONText.quoted(PayloadDialect.referenceIDsKey) + ":[").utf8)
        batchSuffix = Array(("]" + flag).utf8)
    }

    var singleOverhead: Int { singlePrefix.count + singleSuffix.count }
    var batchOverhead: Int { batchPrefix.count + batchSuffix.count }

    /// A body carrying already-encoded references.
    func body(_ references: [[UInt8]]) -> Data {
        guard references.count != 1 else { return Data(singlePrefix + references[0] + singleSuffix) }
        var bytes = batchPrefix
        for (index, reference) in references.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += reference
        }
        return Data(bytes + batchSuffix)
    }
}

/// A canonical retraction body of references and threads, built up one at a
/// time, which knows its size before each is added.
private struct MixedBody {
    let head: [UInt8]
    let flag: [UInt8]
    var references: [[UInt8]] = []
    var threads: [[UInt8]] = []
    var moreInFeed = false

    /// - Parameter head: what comes before the references (``PayloadBuilder``'s `head(_:)`).
    init(head: String, dialect: PayloadDialect) {
        self.head = Array(head.utf8)
        flag = Array((JSONText.quoted(dialect.mustRemoveKey) + ":true}}").utf8)
    }

    static let singleKey = Array((JSONText.quoted(PayloadDialect.canonical.referenceIDKey) + ":").utf8)
    static let listKey = Array((JSONText.quoted(PayloadDialect.referenceIDsKey) + ":[").utf8)
    static let threadsKey = Array((JSONText.quoted(PayloadDialect.threadIDsKey) + ":[").utf8)
    static let more = Array((JSONText.quoted(PayloadDialect.moreInFeedKey) + ":true,").utf8)

    mutating func add(_ item: PayloadBuilder.Retracted, encoded: [UInt8]) {
        switch item {
        case .reference: references.append(encoded)
        case .thread: threads.append(encoded)
        }
    }

    /// The size with `item` added.
    func size(adding item: PayloadBuilder.Retracted, encoded: [UInt8]) -> Int {
        var next = self
        next.add(item, encoded: encoded)
        return next.size(marked: moreInFeed)
    }

    /// The size, with the feed marker or without.
    func size(marked: Bool) -> Int {
        func list(_ items: [[UInt8]]) -> Int { items.reduce(0) { $0 + $1.count } + max(items.count - 1, 0) }
        var size = head.count + flag.count + (marked ? Self.more.count : 0)
        switch references.count {
        case 0: break
        case 1: size += Self.singleKey.count + references[0].count + 1
        default: size += Self.listKey.count + list(references) + 2
        }
        if !threads.isEmpty { size += Self.threadsKey.count + list(threads) + 2 }
        return size
    }

    var data: Data {
        func list(_ items: [[UInt8]]) -> [UInt8] { Array(items.joined(separator: [UInt8(ascii: ",")])) }
        var bytes = head
        switch references.count {
        case 0: break
        case 1: bytes += Self.singleKey + references[0] + [UInt8(ascii: ",")]
        default: bytes += Self.listKey + list(references) + Array("],".utf8)
        }
        if !threads.isEmpty { bytes += Self.threadsKey + list(threads) + Array("],".utf8) }
        if moreInFeed { bytes += Self.more }
        return Data(bytes + flag)
    }
}
