import Foundation
import RetractFCM
import SimulatorSupport
import _CryptoExtras

/// What an ``FCMSimulator`` accepts and how it answers.
public struct FCMSimulatorConfiguration: Sendable {
    /// A service account the simulator knows: its public key checks the
    /// assertions it signs, and its tokens may send for its project only.
    public struct Account: Sendable {
        public var clientEmail: String
        public var projectID: String
        public var publicKey: _RSA.Signing.PublicKey

        public init(clientEmail: String, projectID: String, publicKey: _RSA.Signing.PublicKey) {
            self.clientEmail = clientEmail
            self.projectID = projectID
            self.publicKey = publicKey
        }

        public init(_ account: FCMServiceAccount) {
            self.init(clientEmail: account.clientEmail, projectID: account.projectID, publicKey: account.privateKey.publicKey)
        }
    }

    public var host: String
    /// 0 picks a free port.
    public var port: Int
    public var accounts: [Account]
    /// How long the access tokens it issues live, in seconds (Google's are good for an hour).
    public var accessTokenLifetime: Int
    /// Whether to keep what each device received (a benchmark turns it off).
    public var recordsInbox: Bool
    /// The simulator's clock, for token expiry (tests move it).
    public var now: @Sendable () -> Date

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        accounts: [Account],
        accessTokenLifetime: Int = 3600,
        recordsInbox: Bool = true,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.host = host
        self.port = port
        self.accounts = accounts
        self.accessTokenLifetime = accessTokenLifetime
        self.recordsInbox = recordsInbox
        self.now = now
    }
}

/// An error the simulator answers a message with instead of accepting it,
/// scripted per device token (see ``FCMSimulator/script(_:for:)``).
public enum FCMFault: Sendable, Hashable {
    /// 404 `UNREGISTERED`: the app was uninstalled.
    case unregistered
    /// 400 `INVALID_ARGUMENT`, blaming `field`.
    case invalidArgument(field: String)
    /// 429 `QUOTA_EXCEEDED`, with `Retry-After` when given.
    case quotaExceeded(retryAfter: Int?)
    /// 503 `UNAVAILABLE`, with `Retry-After` when given.
    case unavailable(retryAfter: Int?)
    /// 500 `INTERNAL`.
    case internalError
    /// 401 `THIRD_PARTY_AUTH_ERROR`: Firebase's APNs credentials were refused.
    case thirdPartyAuthError
    /// 403 `SENDER_ID_MISMATCH`: the token belongs to another project.
    case senderIDMismatch
    /// 401 `UNAUTHENTICATED`: the access token is refused (revoked, say).
    case unauthenticated
}

/// One message the simulator accepted for a device.
public struct FCMReceivedMessage: Sendable, Hashable {
    public var token: String
    public var project: String
    /// `message.data`.
    public var data: [String: String]
    /// `message.apns.headers`.
    public var apnsHeaders: [String: String]
    /// `message.android.priority`, when given.
    public var androidPriority: String?
    /// `message.android.notification` (title, body, tag), when given: what an
    /// Android phone shows. A notification with the tag of one showing takes its place.
    public var androidNotification: [String: String]? = nil
    /// What an iPhone's app gets as `userInfo`, as JSON: the `apns` payload's
    /// keys, the `data` keys beside them (FCM merges them so), and
    /// `gcm.message_id`.
    public var userInfoJSON: Data
    public var receivedAt: Date

    public init(
        token: String, project: String, data: [String: String], apnsHeaders: [String: String] = [:], androidPriority: String? = nil,
        androidNotification: [String: String]? = nil, userInfoJSON: Data = Data("{}".utf8), receivedAt: Date
    ) {
        self.token = token
        self.project = project
        self.data = data
        self.apnsHeaders = apnsHeaders
        self.androidPriority = androidPriority
        self.androidNotification = androidNotification
        self.userInfoJSON = userInfoJSON
        self.receivedAt = receivedAt
    }

    /// ``userInfoJSON`` as the dictionary an app delegate is handed.
    public var userInfo: [AnyHashable: Any] {
        ((try? JSONSerialization.jsonObject(with: userInfoJSON)) as? [String: Any]) ?? [:]
    }

    /// The push as APNs hands it to the iPhone, for ``APNsSimulatedDevice/replay(_:on:)``.
    public var asAPNsPush: APNsReceivedPush {
        APNsReceivedPush(apnsID: UUID(), headers: apnsHeaders, body: userInfoJSON, receivedAt: receivedAt)
    }
}

/// Counts since the simulator started.
public struct FCMSimulatorStatistics: Sendable, Hashable {
    /// Access tokens the token endpoint issued.
    public var accessTokensIssued = 0
    /// Assertions or grants it refused.
    public var tokenRequestsRefused = 0
    public var messagesAccepted = 0
    /// Messages answered with an error, by FCM error code or status.
    public var messagesRejected: [String: Int] = [:]
    /// Messages that came over HTTP/1.1 rather than HTTP/2.
    public var messagesOverHTTP1 = 0
}
