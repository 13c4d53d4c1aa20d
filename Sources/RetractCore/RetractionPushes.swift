import NIOCore
import RetractKit
import RetractModel
import RetractStore

/// The pushes a retraction sends each of its devices, in its delivery mode
/// (docs/payload.md, "Delivery modes").
package struct RetractionPushes {
    package let mode: RetractionMode
    /// The account it is of: every body names it, and carries its references
    /// and threads as the app names them (the ledger's keys read back,
    /// ``LedgerScope``).
    package let account: String?
    private var bodies: BodyCache
    /// Whether a device's recent earlier retractions ride along in its pushes:
    /// the canonical dialect, in `background` and `service-extension` modes.
    package let carriesHistory: Bool
    /// For a retraction of a whole thread in the canonical dialect: the
    /// body every device without history gets, whatever its references
    /// (built at first use).
    private let thread: String?
    private var threadBodies: [Int: ByteBuffer] = [:]
    /// For an edit: the new text its pushes carry instead of a removal.
    private let edit: NotificationEdit?
    /// The last edit body built: every device of an edit gets the same.
    private var lastEditBody: (reference: ReferenceID, limit: Int, body: ByteBuffer)?
    /// Bodies topped up with history, by what they carry: the devices of a
    /// broadcast mostly share their history too. At most 1,024 are kept.
    private var historyBodies: [HistoryKey: (body: ByteBuffer, carried: Int)] = [:]
    /// The last of them: the next device most often has the same, in the
    /// same array (the ledger hands devices with the same history one
    /// array), which compares equal without hashing a reference.
    private var lastTopUp: (key: HistoryKey, made: (body: ByteBuffer, carried: Int))?

    private struct HistoryKey: Hashable {
        var references: [ReferenceID]
        var threads: [String]
        var history: [PayloadBuilder.Retracted]
        var limit: Int
        var moreInFeed: Bool
    }

    /// Why a device is not reached in `replace` mode: no collapse id was
    /// recorded for its original, so no alert can take its place.
    package static let noCollapseID =
        "replace: the original was recorded without a collapse id, so it cannot be replaced (record it with its collapse id)"

    /// Why a device is not sent a `replace` alert: each original it would
    /// replace was replaced already, on the device, by a newer notification
    /// under the same collapse id, and the alert would replace that one.
    package static let superseded =
        "replace: not sent, a newer notification under the same collapse id took the original's place on the device (an alert would hide it)"

    /// Whether pushes in `mode` and `dialect` carry a device's recent earlier
    /// retractions too. `replace` sends one alert per collapse id, in place of
    /// one original; the legacy dialect carries one reference per push.
    package static func carriesHistory(mode: RetractionMode, dialect: PayloadDialect) -> Bool {
        dialect == .canonical && mode != .replace
    }

    /// What one device is sent.
    package struct DevicePushes {
        package var pushes: [OutgoingPush]
        /// The references this mode cannot reach on it (`replace`: those without a collapse id).
        package var unreached: [ReferenceID] = []
        /// Of the device's ``DeviceReferences/history``, how many its last push carries...
        package var historyCarried = 0
        /// ...and how many did not fit.
        package var historyLeftOut = 0
    }

    /// Whether a mode's alerts take an original's collapse id, so that
    /// superseded originals (``DeviceReferences/superseded``) matter to it.
    package static func usesCollapseIDs(_ mode: RetractionMode) -> Bool { mode != .background }

    /// - Parameters:
    ///   - text: what the alert of `service-extension` and `replace` shows.
    ///   - badge: the app icon's badge the alerts set.
    ///   - interruption: how the alerts interrupt on iOS 15 and later (the app's setting).
    ///   - account: the account the retraction is of (``Retraction/account``);
    ///     `thread` and `editThread` are the ledger's keys, within it.
    ///   - thread: the conversation a retraction of a whole thread takes
    ///     (``RetractionSelector/takesWholeThread(createdAt:)``). Its
    ///     background and service-extension pushes then carry the thread
    ///     rather than the references, in the canonical dialect; the legacy
    ///     dialect, which has no threads, and `replace`, whose alerts go one
    ///     per collapse id, carry references as for any retraction.
    ///   - edit: for an edit, the new text its pushes carry instead of a
    ///     removal (``PayloadBuilder/editBody(for:edit:limit:aps:)``), and the
    ///     alert modes show, under `editThread`. Nothing rides along with it.
    package init(
        mode: RetractionMode, dialect: PayloadDialect, text: String, badge: Int?, interruption: RetractionAPS.Interruption = .passive,
        account: String? = nil, thread: String? = nil, edit: NotificationEdit? = nil, editThread: String? = nil
    ) {
        self.mode = mode
        self.account = account
        self.edit = edit
        self.thread = dialect == .canonical && mode != .replace && edit == nil ? thread.map(LedgerScope.value) : nil
        // iOS groups by `thread-id`: an account's conversation is grouped under its own.
        let editThread = editThread.map { AccountScope.identifier(of: LedgerScope.value($0), account: account) }
        carriesHistory = edit == nil && Self.carriesHistory(mode: mode, dialect: dialect)
        let aps: RetractionAPS =
            switch (mode, edit) {
            case (.background, _): .background
            case (.serviceExtension, nil): .alert(text, mutableContent: true, badge: badge, interruption: interruption)
            case (.replace, nil): .alert(text, badge: badge, interruption: interruption)
            case (.serviceExtension, let edit?):
                .alert(
                    title: edit.title, body: edit.body, mutableContent: true, badge: badge, thread: editThread, interruption: interruption)
            case (.replace, let edit?):
                .alert(title: edit.title, body: edit.body, badge: badge, thread: editThread, interruption: interruption)
            }
        bodies = BodyCache(builder: PayloadBuilder(dialect: dialect, account: account), aps: aps)
    }

    /// The pushes for one device, each body at most `limit` bytes, and the
    /// references this mode cannot reach on it (`replace`: those without a
    /// collapse id). No alert takes the collapse id of a superseded
    /// reference: `service-extension` carries it under another collapse id
    /// or none, `replace` leaves it out (the device shows it no longer).
    /// Where history rides along (``carriesHistory``), the device's last push
    /// also carries the newest of its ``DeviceReferences/history`` that fit.
    /// A device whose references need several bodies, or whose history does
    /// not all fit, is told the rest is in the device feed
    /// (``PayloadDialect/moreInFeedKey``): a phone that keeps only the last
    /// push can read it there.
    package mutating func pushes(for ledgerDevice: DeviceReferences, limit: Int) throws -> DevicePushes {
        let (device, otherAccounts) = asTheAppNamesIt(ledgerDevice)
        func push(_ body: ByteBuffer, collapseID: String?) -> OutgoingPush {
            OutgoingPush(token: device.token, body: body, kind: .retraction(mode, collapseID: collapseID))
        }
        if let edit {
            switch try editPush(for: device, edit: edit, limit: limit) {
            case .send(let body, let collapseID): return DevicePushes(pushes: [push(body, collapseID: collapseID)])
            case .unreached: return DevicePushes(pushes: [], unreached: device.references)
            case .superseded: return DevicePushes(pushes: [])
            }
        }
        if let thread {
            let collapseID = mode == .serviceExtension ? carrierCollapseID(for: device.references, on: device) : nil
            guard carriesHistory, !device.history.isEmpty || otherAccounts > 0 else {
                return DevicePushes(pushes: [push(try threadBody(thread, limit: limit), collapseID: collapseID)])
            }
            let (body, count) = try toppedUp([], threads: [thread], with: device.history, limit: limit, moreInFeed: otherAccounts > 0)
            return DevicePushes(
                pushes: [push(body, collapseID: collapseID)], historyCarried: count,
                historyLeftOut: device.history.count - count + otherAccounts)
        }
        switch mode {
        case .background, .serviceExtension:
            var carried = try bodies.carrying(device.references, limit: limit, markingSplits: carriesHistory)
            var history = (carried: 0, leftOut: 0)
            if carriesHistory, !device.history.isEmpty || otherAccounts > 0, let last = carried.popLast() {
                let (body, count) = try toppedUp(
                    last.references, with: device.history, limit: limit, moreInFeed: !carried.isEmpty || otherAccounts > 0)
                carried.append((last.references, body))
                history = (count, device.history.count - count + otherAccounts)
            }
            // Should the extension not run, iOS shows a service-extension carrier
            // as sent: with the collapse id of one of the originals it carries,
            // in that one's place rather than beside it.
            let pushes = carried.map { references, body in
                push(body, collapseID: mode == .serviceExtension ? carrierCollapseID(for: references, on: device) : nil)
            }
            return DevicePushes(pushes: pushes, historyCarried: history.carried, historyLeftOut: history.leftOut)
        case .replace:
            // One alert per collapse id: each takes the place of its original.
            var byCollapseID: [String: [ReferenceID]] = [:]
            var unreached: [ReferenceID] = []
            for reference in device.references where !device.superseded.contains(reference) {
                if let collapseID = device.collapseIDs[reference] {
                    byCollapseID[collapseID, default: []].append(reference)
                } else {
                    unreached.append(reference)
                }
            }
            var pushes: [OutgoingPush] = []
            for (collapseID, references) in byCollapseID.sorted(by: { $0.key < $1.key }) {
                pushes += try bodies.bodies(for: references, limit: limit).map { push($0, collapseID: collapseID) }
            }
            return DevicePushes(pushes: pushes, unreached: unreached)
        }
    }

    /// `device` as the app names what it holds: its references, collapse ids
    /// and superseded references without the ledger's account scope, and its
    /// history only what is of this retraction's account; with how many of
    /// its history's items are another account's, which no body of this
    /// account can carry (the device feed lists them, and the body says so).
    private func asTheAppNamesIt(_ device: DeviceReferences) -> (DeviceReferences, otherAccounts: Int) {
        guard
            account != nil || device.references.contains(where: { LedgerScope.split($0).account != nil })
                || device.history.contains(where: Self.isOfAnAccount)
        else { return (device, 0) }
        var plain = device
        plain.references = device.references.map { LedgerScope.split($0).reference }
        plain.collapseIDs = Dictionary(device.collapseIDs.map { (LedgerScope.split($0.key).reference, $0.value) }) { first, _ in first }
        plain.superseded = Set(device.superseded.map { LedgerScope.split($0).reference })
        var others = 0
        plain.history = device.history.compactMap { item in
            let (itemAccount, value): (String?, PayloadBuilder.Retracted) =
                switch item {
                case .reference(let reference):
                    (LedgerScope.split(reference).account, .reference(LedgerScope.split(reference).reference))
                case .thread(let thread): (LedgerScope.split(thread).account, .thread(LedgerScope.value(thread)))
                }
            guard itemAccount == account else {
                others += 1
                return nil
            }
            return value
        }
        return (plain, others)
    }

    private static func isOfAnAccount(_ item: PayloadBuilder.Retracted) -> Bool {
        switch item {
        case .reference(let reference): LedgerScope.split(reference).account != nil
        case .thread(let thread): LedgerScope.split(thread).account != nil
        }
    }

    /// What an edit sends one device.
    private enum EditPush {
        /// Its one push, under its original's collapse id in the alert
        /// modes, so iOS shows it in the original's place.
        case send(ByteBuffer, collapseID: String?)
        /// Nothing: `replace` cannot reach an original without a collapse id.
        case unreached
        /// Nothing: in `replace`, a newer notification under the same
        /// collapse id took the original's place, and must not be hidden.
        case superseded
    }

    private mutating func editPush(for device: DeviceReferences, edit: NotificationEdit, limit: Int) throws -> EditPush {
        guard let reference = device.references.first else { return .unreached }
        let superseded = device.superseded.contains(reference)
        let collapseID = superseded ? nil : device.collapseIDs[reference]
        if mode == .replace {
            if superseded { return .superseded }
            if collapseID == nil { return .unreached }
        }
        let body: ByteBuffer
        if let last = lastEditBody, last.reference == reference, last.limit == limit {
            body = last.body
        } else {
            body = ByteBuffer(data: try bodies.builder.editBody(for: reference, edit: edit, limit: limit, aps: bodies.aps))
            lastEditBody = (reference, limit, body)
        }
        return .send(body, collapseID: mode == .background ? nil : collapseID)
    }

    /// The collapse id a `service-extension` carrier of `references` takes:
    /// that of the first one the device still shows, so that, should the
    /// extension not run, the carrier lands in that original's place.
    private func carrierCollapseID(for references: [ReferenceID], on device: DeviceReferences) -> String? {
        references.lazy.filter { !device.superseded.contains($0) }.compactMap { device.collapseIDs[$0] }.first
    }

    /// A body of `references` and `threads` topped up with the newest of
    /// `history` that fit, built once per list.
    private mutating func toppedUp(
        _ references: [ReferenceID], threads: [String] = [], with history: [PayloadBuilder.Retracted], limit: Int, moreInFeed: Bool
    ) throws -> (body: ByteBuffer, carried: Int) {
        let key = HistoryKey(references: references, threads: threads, history: history, limit: limit, moreInFeed: moreInFeed)
        if let last = lastTopUp, last.key == key { return last.made }
        if let made = historyBodies[key] {
            lastTopUp = (key, made)
            return made
        }
        let (body, carried) = try bodies.builder.retractionBody(
            for: references, threads: threads, addingWhatFitsOf: history, limit: limit, aps: bodies.aps, moreInFeed: moreInFeed)
        let made = (body: ByteBuffer(data: body), carried: carried)
        if historyBodies.count < BodyCache.capacity { historyBodies[key] = made }
        lastTopUp = (key, made)
        return made
    }

    /// The thread's body under `limit`, built once per limit.
    private mutating func threadBody(_ thread: String, limit: Int) throws -> ByteBuffer {
        if let body = threadBodies[limit] { return body }
        let body = ByteBuffer(bytes: try bodies.builder.threadRetractionBody(for: [thread], limit: limit, aps: bodies.aps))
        threadBodies[limit] = body
        return body
    }
}
