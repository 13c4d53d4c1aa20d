import Foundation
import RetractKit
import RetractModel
import RetractStore

/// A read as a backend reports it (`POST /v1/reads`, `retract reads`): a
/// recipient read a conversation up to a point, on one of its devices.
package struct ReadRequest: Sendable {
    package var app: App
    /// The user who read, as deliveries' `recipient` label names them.
    package var recipient: String
    /// The conversation, as deliveries' `thread` label names it.
    package var thread: String
    /// Up to a time (every message sent at or before it), or up to one
    /// message (those sent before it, and it).
    package var upTo: Date?
    package var upToReference: ReferenceID?
    /// The device the user read on: not pushed.
    package var reader: DeviceToken?
    /// The app icon's badge the pushes set.
    package var badge: Int?
    package var account: String?

    package init(
        app: App, recipient: String, thread: String, upTo: Date? = nil, upToReference: ReferenceID? = nil, reader: DeviceToken? = nil,
        badge: Int? = nil, account: String? = nil
    ) {
        self.app = app
        self.recipient = recipient
        self.thread = thread
        self.upTo = upTo
        self.upToReference = upToReference
        self.reader = reader
        self.badge = badge
        self.account = account
    }
}

/// What a read did: its id (it names the read in the device feed), the
/// devices told, and the point as a time.
package struct ReadReceipt: Hashable, Sendable {
    package var id: UUID
    package var devices: Int
    package var deliveries: Int
    package var upTo: Date?
}

extension RetractEngine {
    /// Takes a read (docs/reads.md): the recipient's other devices that
    /// were sent messages of the conversation up to the point are told to
    /// remove them, in one statement, and the read courier is woken to push
    /// them. Nothing is audited: reads are counted
    /// (`retract_reads_total`), and one in ``readLogSample`` is logged.
    ///
    /// - Throws: ``RetractError/Code/invalidInput`` naming the field at
    ///   fault; ``RetractError/Code/unknownReference`` for an
    ///   `upToReference` of which no delivery is recorded.
    package func read(_ request: ReadRequest) async throws(RetractError) -> ReadReceipt {
        try Self.check(account: request.account)
        for (field, value) in [("recipient", request.recipient), ("thread", request.thread)] {
            if let problem = DeliveryLabels.problem(with: value) { throw RetractError(.invalidInput, "\(field): \(problem)", field: field) }
        }
        if let badge = request.badge, badge < 0 {
            throw RetractError(.invalidInput, "badge: \(badge) is negative; give 0 to clear it", field: "badge")
        }
        let point: ReadPoint
        switch (request.upTo, request.upToReference) {
        case (let time?, nil): point = .time(time)
        case (nil, let reference?): point = .reference(LedgerScope.reference(reference, account: request.account).rawValue)
        case (nil, nil): throw RetractError(.invalidInput, "upTo: give the point read up to, as a time or as upToReference", field: "upTo")
        case (_?, _?): throw RetractError(.invalidInput, "upToReference: give upTo or upToReference, not both", field: "upToReference")
        }
        let record = ReadRecord(
            appID: request.app.id, recipient: LedgerScope.key(request.recipient, account: request.account),
            thread: LedgerScope.key(request.thread, account: request.account), point: point, reader: request.reader,
            badge: request.badge)
        let taken = try await RetractError.store { () async throws(StoreError) in try await store.recordRead(record) }
        if case .reference(let reference) = point, taken.upTo == nil {
            throw RetractError(
                .unknownReference, "app \(request.app.name) has no recorded delivery of \"\(LedgerScope.split(reference).value)\"",
                field: "upToReference")
        }
        if taken.devices > 0 { readWake.signal() }
        if sender.metrics.countRead(devices: taken.devices) % Self.readLogSample == 1 {
            logger.info(
                "read taken (1 in \(Self.readLogSample) logged)",
                metadata: ["app": "\(request.app.name)", "read": "\(record.id)", "devices": "\(taken.devices)"])
        }
        return ReadReceipt(id: record.id, devices: taken.devices, deliveries: taken.deliveries, upTo: taken.upTo)
    }

    /// One read in this many is logged: reads come 10 to 50 times as often as deletions.
    package static let readLogSample = 1_000
}
