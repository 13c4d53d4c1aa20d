import Foundation
import RetractKit

/// One notification that reached one device: what the ledger records.
package struct Delivery: Hashable, Sendable {
    package var appID: Int64
    package var reference: ReferenceID
    package var token: DeviceToken
    package var sentAt: Date
    /// The service the notification went through, and a retraction will.
    package var transport: PushService
    /// The original's `apns-collapse-id` (its identifier on an iPhone, its
    /// tag on Android), when it had one: what a `replace` retraction replaces.
    package var collapseID: String?
    /// Its conversation, sender, recipient and campaign, where given.
    package var labels: DeliveryLabels

    package init(
        appID: Int64, reference: ReferenceID, token: DeviceToken, sentAt: Date, transport: PushService = .apns, collapseID: String? = nil,
        labels: DeliveryLabels = DeliveryLabels()
    ) {
        self.appID = appID
        self.reference = reference
        self.token = token
        self.sentAt = sentAt
        self.transport = transport
        self.collapseID = collapseID
        self.labels = labels
    }

    /// The longest collapse id APNs takes, in UTF-8 bytes.
    package static let maximumCollapseIDLength = 64

    /// What is wrong with `collapseID` as an original's collapse id, or nil.
    package static func problem(withCollapseID collapseID: String) -> String? {
        if collapseID.isEmpty { return "a collapse id must not be empty" }
        if collapseID.utf8.count > maximumCollapseIDLength {
            return "\(collapseID.utf8.count) bytes; APNs takes a collapse id of at most \(maximumCollapseIDLength)"
        }
        if collapseID.containsControlCharacters { return "a collapse id cannot hold control characters" }
        return nil
    }

    /// The longest reference the ledger keeps, in UTF-8 bytes.
    package static let maximumReferenceLength = 256
    /// The longest device token the ledger keeps, in bytes: APNs's are 32
    /// today, FCM registration tokens about 160 characters.
    package static let maximumTokenLength = 512
}

/// A device of a retraction, with every one of the retraction's references it received.
package struct DeviceReferences: Hashable, Sendable {
    package var token: DeviceToken
    /// Sorted, without repeats.
    package var references: [ReferenceID]
    /// How the device is reached.
    package var transport: PushService
    /// The collapse id each reference's original was sent with, where it had one.
    package var collapseIDs: [ReferenceID: String]
    /// Of ``references``, those whose original the device no longer shows:
    /// a newer notification, not being retracted, was sent to it under the
    /// same collapse id and took its place. An alert under that collapse id
    /// would hide the newer one. Found just before sending (see
    /// `RetractStore.supersededReferences(appID:devices:retracted:)`);
    /// empty until then.
    package var superseded: Set<ReferenceID> = []
    /// What the app's recent earlier retractions took from this device,
    /// newest first, none of it in ``references``: references, and threads
    /// retracted whole. It rides along in its pushes (see
    /// `RetractStore.recentRetractions(appID:devices:since:excluding:listLimit:)`);
    /// empty until then.
    package var history: [PayloadBuilder.Retracted] = []

    package init(
        token: DeviceToken, references: [ReferenceID], transport: PushService = .apns, collapseIDs: [ReferenceID: String] = [:]
    ) {
        self.token = token
        self.references = references
        self.transport = transport
        self.collapseIDs = collapseIDs
    }
}

/// One page of the devices of some references, in token order.
package struct DevicePage: Hashable, Sendable {
    package init(devices: [DeviceReferences], skipped: [DeviceToken] = [], last: DeviceToken?, mayHaveMore: Bool) {
        self.devices = devices
        self.skipped = skipped
        self.last = last
        self.mayHaveMore = mayHaveMore
    }

    /// The devices of the page to send to.
    package var devices: [DeviceReferences]
    /// Devices of the page skipped because their token is dead: no delivery
    /// of theirs is newer than the token's death. In token order.
    package var skipped: [DeviceToken]
    /// How many devices were skipped as dead.
    package var deadSkipped: Int { skipped.count }
    /// The last token the page covered, dead or alive: the next page starts after it.
    package var last: DeviceToken?
    /// Whether the page was full, so more devices may follow.
    package var mayHaveMore: Bool
}

extension DevicePage {
    /// One delivery row: a reference, its device and the device's service,
    /// when it was sent, and when the token was found dead if it was.
    package typealias Row = (
        reference: String, token: DeviceToken, transport: PushService, sentAt: Date, deadSince: Date?, collapseID: String?
    )

    /// The page made of each reference's first `limit` rows after the cursor:
    /// at most `limit` devices.
    ///
    /// A reference that returned `limit` rows may have more beyond its last
    /// token, so the page ends at the smallest such last token: every device
    /// up to it has all of its references here. A device can come twice for
    /// one reference (sent on two days); it counts once. A delivery sent no
    /// later than its token's death is dead; a device with no live delivery
    /// is skipped (and counted), one with some is sent the references of its
    /// live deliveries: the app registered the token again after it died. A
    /// token recorded through both services (which real tokens never are) is
    /// reached through APNs.
    package init(merging rows: [Row], limit: Int) {
        var perReference: [String: (count: Int, last: DeviceToken)] = [:]
        var devices: [DeviceToken: Device] = [:]
        for row in rows {
            let seen = perReference[row.reference] ?? (0, row.token)
            perReference[row.reference] = (seen.count + 1, max(seen.last, row.token))
            devices[row.token, default: Device(transport: row.transport)].add(row)
        }
        let cutoff = perReference.values.filter { $0.count == limit }.map(\.last).min()
        let tokens = devices.keys.sorted().filter { token in cutoff.map { token <= $0 } ?? true }
        // Several references can bring up to `limit` devices each: the page keeps the first `limit`.
        self.init(tokens: Array(tokens.prefix(limit)), of: devices, mayHaveMore: cutoff != nil || tokens.count > limit)
    }

    /// The page made of a selector's rows in token order: at most `limit`
    /// devices. With `lastMayContinue` (the rows were cut at a row limit),
    /// the last device's rows may go on past them, so it is left to the next
    /// page, unless it is the only device.
    package init(selecting rows: [Row], limit: Int, mayHaveMore: Bool, lastMayContinue: Bool) {
        var devices: [DeviceToken: Device] = [:]
        var tokens: [DeviceToken] = []
        for row in rows {
            if devices[row.token] == nil {
                tokens.append(row.token)
                devices[row.token] = Device(transport: row.transport)
            }
            devices[row.token]!.add(row)
        }
        var more = mayHaveMore
        if lastMayContinue, tokens.count > 1 {
            tokens.removeLast()
            more = true
        }
        if tokens.count > limit {
            tokens.removeLast(tokens.count - limit)
            more = true
        }
        self.init(tokens: tokens, of: devices, mayHaveMore: more)
    }

    /// The page of `tokens`, in order, each device made of its merged rows.
    private init(tokens: [DeviceToken], of devices: [DeviceToken: Device], mayHaveMore: Bool) {
        var page = DevicePage(devices: [], last: nil, mayHaveMore: mayHaveMore)
        for token in tokens {
            let device = devices[token]!
            page.last = token
            if device.references.isEmpty {
                page.skipped.append(token)
            } else {
                page.devices.append(
                    DeviceReferences(
                        token: token, references: device.references.sorted().map { ReferenceID($0) }, transport: device.transport,
                        collapseIDs: device.collapseIDs))
            }
        }
        self = page
    }

    /// A device as its rows are merged.
    private struct Device {
        var references: Set<String> = []
        var transport: PushService
        var collapseIDs: [ReferenceID: String] = [:]

        /// Adds a row, in place (one lookup per row): its reference when the
        /// delivery is newer than the token's death.
        mutating func add(_ row: Row) {
            if row.deadSince.map({ row.sentAt > $0 }) ?? true {
                references.insert(row.reference)
                if let collapseID = row.collapseID { collapseIDs[ReferenceID(row.reference)] = collapseID }
            }
            if row.transport == .apns { transport = .apns }
        }
    }
}
