import NIOCore
import NIOHPACK

/// One request handed to a connection, and how its answer gets back.
struct APNsExchange: Sendable {
    /// What became of a request on one connection.
    enum Outcome: Sendable {
        /// The server answered.
        case answered(status: Int, headers: HPACKHeaders, body: ByteBuffer?)
        /// The server never processed it (not written, refused, or above a
        /// GOAWAY's last stream): safe to send on another connection.
        case notProcessed
        /// It failed in a way that may or may not have reached APNs.
        case failed(APNsError)
    }

    var headers: HPACKHeaders
    var body: ByteBuffer
    var deadline: NIODeadline
    /// Called exactly once, on the connection's event loop.
    var complete: @Sendable (Outcome) -> Void
}
