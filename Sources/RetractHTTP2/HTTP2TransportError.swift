/// Why a request sent through an ``HTTP2ConnectionPool`` got no answer.
/// Each client says it in its own terms (`APNsError`, `FCMError`).
package enum HTTP2TransportError: Error, Sendable, Hashable {
    /// No answer within the request's deadline.
    case timedOut
    /// The connection closed, or the stream was reset, while the request was in flight.
    case connectionLost
    /// No connection could be made (refused, TLS failed, no SETTINGS).
    case connectFailed(String)
    /// The server refused the client certificate during the TLS handshake
    /// (the alert, e.g. "TLS alert certificateRevoked").
    case clientCertificateRefused(String)
    /// The pool was shut down.
    case clientShutdown
}
