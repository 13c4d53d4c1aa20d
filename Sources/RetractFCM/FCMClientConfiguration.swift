import Foundation
import NIOCore

/// Where an ``FCMClient`` sends and how long it waits.
public struct FCMClientConfiguration: Sendable {
    /// The base of `/v1/projects/<project>/messages:send`.
    public var messagesBaseURL: String
    /// Replaces the token endpoint the service account names (a proxy, the simulator).
    public var tokenURI: String?
    /// Extra root certificates (PEM) to trust, for both endpoints.
    public var additionalTrustRootsPEM: [String]
    public var requestTimeout: TimeAmount
    public var connectTimeout: TimeAmount
    /// Connections to FCM to start with; more are opened, up to
    /// ``maximumConnectionCount``, when more messages are to be in flight
    /// than the server's stream limit lets these carry.
    public var connectionCount: Int
    public var maximumConnectionCount: Int
    /// An access token is replaced this long before it expires, so no request
    /// goes out with a token about to lapse.
    public var tokenRefreshMargin: TimeInterval
    /// The clock the token cache reads (tests move it).
    public var now: @Sendable () -> Date

    public static let defaultMessagesBaseURL = "https://fcm.googleapis.com"

    public init(
        messagesBaseURL: String = Self.defaultMessagesBaseURL,
        tokenURI: String? = nil,
        additionalTrustRootsPEM: [String] = [],
        requestTimeout: TimeAmount = .seconds(30),
        connectTimeout: TimeAmount = .seconds(10),
        connectionCount: Int = 1,
        maximumConnectionCount: Int = 8,
        tokenRefreshMargin: TimeInterval = 300,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.messagesBaseURL = messagesBaseURL
        self.tokenURI = tokenURI
        self.additionalTrustRootsPEM = additionalTrustRootsPEM
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.connectionCount = max(1, connectionCount)
        self.maximumConnectionCount = max(self.connectionCount, maximumConnectionCount)
        self.tokenRefreshMargin = tokenRefreshMargin
        self.now = now
    }
}
