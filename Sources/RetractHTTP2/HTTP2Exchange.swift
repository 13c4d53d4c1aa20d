import NIOCore
import NIOHPACK

/// One request handed to a connection, and how its answer gets back.
package struct HTTP2Exchange: Sendable {
    /// What became of a request on one connection.
    package enum Outcome: Sendable {
        /// The server answered.
        case answered(status: Int, headers: HPACKHeaders, body: ByteBuffer?)
        /// The server never processed it (not written, refused, or above a
        /// GOAWAY's last stream): safe to send on another connection.
        case notProcessed
        /// It failed in a way that may or may not have reached the server.
        case failed(HTTP2TransportError)
    }

    package var headers: HPACKHeaders
    package var body: ByteBuffer
    package var deadline: NIODeadline
    /// Called exactly once, on the connection's event loop.
    package var complete: @Sendable (Outcome) -> Void

    package init(headers: HPACKHeaders, body: ByteBuffer, deadline: NIODeadline, complete: @escaping @Sendable (Outcome) -> Void) {
        self.headers = headers
        self.body = body
        self.deadline = deadline
        self.complete = complete
    }
}
