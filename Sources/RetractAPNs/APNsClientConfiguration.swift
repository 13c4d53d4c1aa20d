import Foundation
import NIOCore

/// Where APNs is.
public enum APNsEnvironment: Hashable, Sendable {
    case production
    case sandbox
    /// Any HTTP/2-over-TLS endpoint that speaks APNs, such as the simulator.
    case custom(host: String, port: Int)

    public var host: String {
        switch self {
        case .production: "api.push.apple.com"
        case .sandbox: "api.sandbox.push.apple.com"
        case .custom(let host, _): host
        }
    }

    public var port: Int {
        switch self {
        case .production, .sandbox: 443
        case .custom(_, let port): port
        }
    }
}

/// How the client proves who it is.
public enum APNsAuthentication: Sendable {
    /// A provider token signed with the team's `.p8` key; one key serves every
    /// app of the team and both environments.
    case token(key: APNsSigningKey, keyID: String, teamID: String)
    /// A TLS client certificate for one app and environment.
    case certificate(APNsClientCertificate)
}

/// A client certificate and its key.
public struct APNsClientCertificate: Sendable {
    enum Source: Sendable {
        case pkcs12(bytes: [UInt8], passphrase: String?)
        case pem(certificateChain: [UInt8], privateKey: [UInt8])
    }

    let source: Source

    /// A PKCS#12 bundle (`.p12`) as Keychain Access exports it.
    public static func pkcs12(_ bytes: [UInt8], passphrase: String? = nil) -> APNsClientCertificate {
        APNsClientCertificate(source: .pkcs12(bytes: bytes, passphrase: passphrase))
    }

    /// A PEM certificate (chain) and its PEM private key.
    public static func pem(certificateChain: [UInt8], privateKey: [UInt8]) -> APNsClientCertificate {
        APNsClientCertificate(source: .pem(certificateChain: certificateChain, privateKey: privateKey))
    }
}

public struct APNsClientConfiguration: Sendable {
    public var environment: APNsEnvironment
    public var authentication: APNsAuthentication
    /// Extra root certificates (PEM) to trust, for a private endpoint.
    public var additionalTrustRootsPEM: [String]
    /// Long-lived HTTP/2 connections to open at first; each carries up to the
    /// server's concurrent-stream limit.
    public var connectionCount: Int
    /// The most connections ``APNsClient/provision(inFlight:)`` grows to,
    /// when more pushes are to be in flight than the first connections carry.
    public var maximumConnectionCount: Int
    /// How long a request may wait for its answer, unless it says otherwise.
    public var requestTimeout: TimeAmount
    public var connectTimeout: TimeAmount
    /// The clock provider tokens are dated with.
    public var now: @Sendable () -> Date

    public init(
        environment: APNsEnvironment,
        authentication: APNsAuthentication,
        additionalTrustRootsPEM: [String] = [],
        connectionCount: Int = 1,
        maximumConnectionCount: Int? = nil,
        requestTimeout: TimeAmount = .seconds(30),
        connectTimeout: TimeAmount = .seconds(10),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.environment = environment
        self.authentication = authentication
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.connectionCount = connectionCount
        self.maximumConnectionCount = max(maximumConnectionCount ?? connectionCount, connectionCount)
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.now = now
    }
}
