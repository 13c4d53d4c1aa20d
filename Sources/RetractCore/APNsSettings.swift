import NIOCore

/// How the engine talks to APNs, for every app alike.
package struct APNsSettings: Sendable {
    /// Extra root certificates (PEM) to trust: a private endpoint, the simulator.
    package var additionalTrustRootsPEM: [String]
    /// The most HTTP/2 connections per app; each carries up to APNs's stream
    /// limit. Two are opened at first, more as the app's window grows past
    /// what they carry.
    package var connectionsPerApp: Int
    package var requestTimeout: TimeAmount
    /// A passphrase for PKCS#12 client certificates (`APNS_CERTIFICATE_PASSPHRASE`).
    package var certificatePassphrase: String?

    /// The connections an app's client opens before its window asks for more.
    package static let firstConnections = 2

    package init(
        additionalTrustRootsPEM: [String] = [],
        connectionsPerApp: Int = 8,
        requestTimeout: TimeAmount = .seconds(30),
        certificatePassphrase: String? = nil
    ) {
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.connectionsPerApp = connectionsPerApp
        self.requestTimeout = requestTimeout
        self.certificatePassphrase = certificatePassphrase
    }
}
