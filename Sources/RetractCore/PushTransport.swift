import Foundation
import NIOCore
import RetractKit
import RetractModel
import RetractPush
import RetractStore

/// One push to one device, as the engine hands it to a transport.
package struct OutgoingPush: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// A removal push in a delivery mode: background, priority 5; or, in
        /// the other modes, an alert, priority 10, put in place of the
        /// notification whose collapse id is `collapseID`.
        case retraction(RetractionMode, collapseID: String? = nil)
        /// A notification sent through Retract. `collapseID` becomes the
        /// notification's identifier on an iPhone. `androidTag` is the tag
        /// Firebase shows it under on an Android phone; nil sends it to
        /// Android as data only, for the app to show (``AndroidDisplay/app``).
        case original(visible: Bool, collapseID: String?, androidTag: String? = nil)
    }

    package var token: DeviceToken
    /// Shared, not copied, by every push with the same body.
    package var body: ByteBuffer
    package var kind: Kind

    package init(token: DeviceToken, body: ByteBuffer, kind: Kind) {
        self.token = token
        self.body = body
        self.kind = kind
    }
}

/// What became of one push, in the terms the engine acts on.
package enum PushOutcome: Sendable, Hashable {
    /// The push service took it.
    case accepted
    /// The token is dead: mark it so, and skip it for what was sent to it
    /// before now. `since` is the service's time when it gave one.
    case tokenDead(since: Date, reason: String)
    /// Worth another attempt after `after`; the push may have reached the
    /// service. The engine's retry budget decides how long to go on.
    case retry(after: Duration, reason: String)
    /// The push never reached the service: it cannot be connected to (a
    /// refused connection, a failed TLS handshake, a connection backing off).
    /// The device waits for the service to come back; no attempt is used up.
    case unreachable(reason: String)
    /// The app's credentials are refused; no push of this app can succeed.
    case authenticationFailed(reason: String)
    /// Sending again will not help.
    case failed(reason: String)
}

/// Sends one app's pushes through one service (``APNsTransport``,
/// ``FCMTransport``): validates them as the service would, and classifies
/// each answer into a ``PushVerdict``; what to do with it is the engine's
/// one ``RetryPolicy``.
package protocol PushTransport: Sendable {
    /// The largest retraction body, in bytes, this service carries.
    var bodyLimit: Int { get }
    /// What the service would refuse about a push of `body` and `kind`, or nil.
    func problem(with body: ByteBuffer, kind: OutgoingPush.Kind) -> String?
    func send(_ push: OutgoingPush) async -> PushVerdict
    /// The app's window now lets `inFlight` pushes through this service at
    /// once: the transport opens the connections they need, within its own cap.
    func provision(inFlight: Int)
    func shutdown() async
}

extension PushTransport {
    /// A transport whose connections do not follow the window.
    package func provision(inFlight: Int) {}
}
