import Crypto
import Foundation
import NIOCore

/// What a simulated APNs accepts and how it misbehaves.
public struct APNsSimulatorConfiguration: Sendable {
    /// The address to listen on; port 0 picks a free port.
    public var host: String
    public var port: Int
    /// The plain-HTTP inbox endpoint for other processes (`GET /inbox/<token>`,
    /// `GET /screen/<token>`, `POST /offline/<token>`, `POST /online/<token>`,
    /// `GET /stats`, `DELETE /inbox`); nil for none, 0 for a free port.
    public var inboxPort: Int?
    public var tls: APNsSimulatorTLS
    /// Keys whose provider tokens are accepted.
    public var tokenKeys: [APNsSimulatorTokenKey]
    /// Accept a well-formed ES256 provider token whose key id is not among
    /// `tokenKeys` without checking its signature: for trying a client
    /// quickly. Tokens of the keys in `tokenKeys` are still verified.
    public var acceptsAnyTokenKey: Bool
    /// Called once for each new way a provider token was refused, with the
    /// simulator's explanation (APNs only answers `InvalidProviderToken`).
    public var onTokenRefused: (@Sendable (_ explanation: String) -> Void)?
    /// Roots (PEM) whose client certificates are accepted instead of a token.
    public var clientCertificateRootsPEM: [String]
    /// Topics accepted; nil accepts any.
    public var topics: Set<String>?
    public var faults: APNsSimulatorFaults
    /// Whether accepted pushes are kept per device; off for benchmarks.
    public var recordsInbox: Bool
    /// What phone each device is, for what it displays (`GET /screen/<token>`).
    public var phones: APNsPhoneMix
    /// The simulator's clock, for token ages.
    public var now: @Sendable () -> Date

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        inboxPort: Int? = nil,
        tls: APNsSimulatorTLS = .selfSigned(writingTo: nil),
        tokenKeys: [APNsSimulatorTokenKey] = [],
        acceptsAnyTokenKey: Bool = false,
        onTokenRefused: (@Sendable (_ explanation: String) -> Void)? = nil,
        clientCertificateRootsPEM: [String] = [],
        topics: Set<String>? = nil,
        faults: APNsSimulatorFaults = APNsSimulatorFaults(),
        recordsInbox: Bool = true,
        phones: APNsPhoneMix = APNsPhoneMix(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.host = host
        self.port = port
        self.inboxPort = inboxPort
        self.tls = tls
        self.tokenKeys = tokenKeys
        self.acceptsAnyTokenKey = acceptsAnyTokenKey
        self.onTokenRefused = onTokenRefused
        self.clientCertificateRootsPEM = clientCertificateRootsPEM
        self.topics = topics
        self.faults = faults
        self.recordsInbox = recordsInbox
        self.phones = phones
        self.now = now
    }
}

/// The simulator's server certificate.
public enum APNsSimulatorTLS: Sendable {
    /// A certificate authority and a server certificate for localhost,
    /// 127.0.0.1 and ::1, made at start. With a folder, the authority's PEM is
    /// written there as `simulator-ca.pem` for clients to trust.
    case selfSigned(writingTo: URL?)
    /// A certificate chain and key in PEM files.
    case files(certificateChain: String, privateKey: String)
}

/// A provider-token signing key the simulator trusts.
public struct APNsSimulatorTokenKey: Sendable {
    public var keyID: String
    public var teamID: String
    // Kept as bytes: swift-crypto's key type is not Sendable on every platform.
    private var publicKeyBytes: Data

    public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKeyBytes = publicKey.x963Representation
    }

    public var publicKey: P256.Signing.PublicKey {
        // The bytes came from a valid key.
        try! P256.Signing.PublicKey(x963Representation: publicKeyBytes)
    }

    /// From the public key's PEM (`-----BEGIN PUBLIC KEY-----`) or the `.p8`
    /// private key's PEM.
    public init(keyID: String, teamID: String, pem: String) throws {
        let publicKey: P256.Signing.PublicKey
        if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) {
            publicKey = key
        } else {
            publicKey = try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey
        }
        self.init(keyID: keyID, teamID: teamID, publicKey: publicKey)
    }
}

/// Scripted misbehaviour. Random faults are decided per device token and
/// attempt from `seed`, so a run is reproducible however requests interleave.
public struct APNsSimulatorFaults: Sendable {
    /// Tokens answered `410 Unregistered`, with the time they became invalid.
    public var unregisteredTokens: [String: Date]
    /// Tokens answered `400 BadDeviceToken`.
    public var badDeviceTokens: Set<String>
    /// The fraction of otherwise good requests answered `429 TooManyRequests`.
    public var tooManyRequestsRate: Double
    /// The fraction of otherwise good requests answered `503 ServiceUnavailable`.
    public var serviceUnavailableRate: Double
    public var seed: UInt64
    /// After this many streams a connection gets GOAWAY; later streams are not processed.
    public var goAwayAfterStreams: Int?
    /// Added before every answer.
    public var latency: TimeAmount
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxConcurrentStreams: Int
    /// SETTINGS_INITIAL_WINDOW_SIZE; 0 grants no window, so no body arrives.
    public var initialWindowSize: Int
    /// Never answer anything.
    public var unresponsive: Bool

    public init(
        unregisteredTokens: [String: Date] = [:],
        badDeviceTokens: Set<String> = [],
        tooManyRequestsRate: Double = 0,
        serviceUnavailableRate: Double = 0,
        seed: UInt64 = 1,
        goAwayAfterStreams: Int? = nil,
        latency: TimeAmount = .zero,
        maxConcurrentStreams: Int = 1000,
        initialWindowSize: Int = 65_535,
        unresponsive: Bool = false
    ) {
        self.unregisteredTokens = unregisteredTokens
        self.badDeviceTokens = badDeviceTokens
        self.tooManyRequestsRate = tooManyRequestsRate
        self.serviceUnavailableRate = serviceUnavailableRate
        self.seed = seed
        self.goAwayAfterStreams = goAwayAfterStreams
        self.latency = latency
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.unresponsive = unresponsive
    }
}
