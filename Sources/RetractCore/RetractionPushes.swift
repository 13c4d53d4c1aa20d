import NIOCore
import RetractKit
import RetractStore

/// The pushes a retraction sends each of its devices, in its delivery mode
/// (docs/payload.md, "Delivery modes").
package struct RetractionPushes {
    package let mode: RetractionMode
    private var bodies: BodyCache
    /// For a retraction by thread in the canonical dialect: the one body
    /// every device gets, whatever its references (built at first use).
    private let thread: String?
    private var threadBodies: [Int: ByteBuffer] = [:]

    /// Why a device is not reached in `replace` mode: no collapse id was
    /// recorded for its original, so no alert can take its place.
    package static let noCollapseID =
        "replace: the original was recorded without a collapse id, so it cannot be replaced (record it with its collapse id)"

    /// Why a device is not sent a `replace` alert: each original it would
    /// replace was replaced already, on the device, by a newer notification
    /// under the same collapse id, and the alert would replace that one.
    package static let superseded =
        "replace: not sent, a newer notification under the same collapse id took the original's place on the device (an alert would hide it)"

    /// Whether a mode's alerts take an original's collapse id, so that
    /// superseded originals (``DeviceReferences/superseded``) matter to it.
    package static func usesCollapseIDs(_ mode: RetractionMode) -> Bool { mode != .background }

    /// - Parameters:
    ///   - text: what the alert of `service-extension` and `replace` shows.
    ///   - badge: the app icon's badge the alerts set.
    ///   - thread: the conversation a retraction by thread takes. Its
    ///     background and service-extension pushes then carry the thread
    ///     rather than the references, in the canonical dialect; the legacy
    ///     dialect, which has no threads, and `replace`, whose alerts go one
    ///     per collapse id, carry references as for any retraction.
    package init(mode: RetractionMode, dialect: PayloadDialect, text: String, badge: Int?, thread: String? = nil) {
        self.mode = mode
        self.thread = dialect == .canonical && mode != .replace ? thread : nil
        let aps: RetractionAPS =
            switch mode {
            case .background: .background
            case .serviceExtension: .alert(text, mutableContent: true, badge: badge)
            case .replace: .alert(text, badge: badge)
            }
        bodies = BodyCache(builder: PayloadBuilder(dialect: dialect), aps: aps)
    }

    /// The pushes for one device, each body at most `limit` bytes, and the
    /// references this mode cannot reach on it (`replace`: those without a
    /// collapse id). No alert takes the collapse id of a superseded
    /// reference: `service-extension` carries it under another collapse id
    /// or none, `replace` leaves it out (the device shows it no longer).
    package mutating func pushes(for device: DeviceReferences, limit: Int) throws -> (pushes: [OutgoingPush], unreached: [ReferenceID]) {
        func push(_ body: ByteBuffer, collapseID: String?) -> OutgoingPush {
            OutgoingPush(token: device.token, body: body, kind: .retraction(mode, collapseID: collapseID))
        }
        if let thread {
            let body = try threadBody(thread, limit: limit)
            let collapseID = mode == .serviceExtension ? carrierCollapseID(for: device.references, on: device) : nil
            return ([push(body, collapseID: collapseID)], [])
        }
        switch mode {
        case .background:
            return (try bodies.bodies(for: device.references, limit: limit).map { push($0, collapseID: nil) }, [])
        case .serviceExtension:
            // Should the extension not run, iOS shows the carrier as sent: with
            // the collapse id of one of the originals it carries, in that one's
            // place rather than beside it. Each body carries its own references.
            var pushes: [OutgoingPush] = []
            for (references, body) in try bodies.carrying(device.references, limit: limit) {
                pushes.append(push(body, collapseID: carrierCollapseID(for: references, on: device)))
            }
            return (pushes, [])
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
            return (pushes, unreached)
        }
    }

    /// The collapse id a `service-extension` carrier of `references` takes:
    /// that of the first one the device still shows, so that, should the
    /// extension not run, the carrier lands in that original's place.
    private func carrierCollapseID(for references: [ReferenceID], on device: DeviceReferences) -> String? {
        references.lazy.filter { !device.superseded.contains($0) }.compactMap { device.collapseIDs[$0] }.first
    }

    /// The thread's body under `limit`, built once per limit.
    private mutating func threadBody(_ thread: String, limit: Int) throws -> ByteBuffer {
        if let body = threadBodies[limit] { return body }
        let body = ByteBuffer(bytes: try bodies.builder.threadRetractionBody(for: [thread], limit: limit, aps: bodies.aps))
        threadBodies[limit] = body
        return body
    }
}
