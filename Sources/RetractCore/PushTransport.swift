import Foundation
import NIOCore
import RetractKit

/// One push to one device, as the engine hands it to a transport.
public struct OutgoingPush: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A silent removal push: background, priority 5.
        case retraction
        /// A notification sent through Retract. `collapseID` becomes the
        /// notification's identifier on the device.
        case original(visible: Bool, collapseID: String?)
    }

    public var token: DeviceToken
    /// Shared, not copied, by every push with the same body.
    public var body: ByteBuffer
    public var kind: Kind

    public init(token: DeviceToken, body: ByteBuffer, kind: Kind) {
        self.token = token
        self.body = body
        self.kind = kind
    }
}

/// What became of one push, in the terms the engine acts on.
public enum PushOutcome: Sendable, Hashable {
    /// The push service took it.
    case accepted
    /// The token will never work again: mark it dead and skip it from now on.
    case tokenDead(since: Date, reason: String)
    /// Worth another attempt after `after`.
    case retry(after: Duration, reason: String)
    /// The app's credentials are refused; no push of this app can succeed.
    case authenticationFailed(reason: String)
    /// Sending again will not help (or the attempts ran out).
    case failed(reason: String)
}

/// Sends pushes for one app: APNs today, FCM later.
public protocol PushTransport: Sendable {
    /// Sends `push`; `attempt` is 1 for the first try, and decides when a
    /// retryable answer becomes ``PushOutcome/failed(reason:)``.
    func send(_ push: OutgoingPush, attempt: Int) async -> PushOutcome
    func shutdown() async
}
