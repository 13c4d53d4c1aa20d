import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import RetractAPNs

/// One request as the simulator received it.
struct IncomingPush {
    var headers: HPACKHeaders
    var body: ByteBuffer?
}

/// The simulator's answer to one request.
enum SimulatorVerdict: Equatable {
    case accept(deviceToken: String, apnsID: UUID)
    /// `explanation`: why, in the simulator's words, for a refused provider token.
    case reject(status: Int, reason: APNsReason, timestamp: Date?, apnsID: UUID, explanation: String? = nil)
}

/// How one connection authenticated so far.
struct ConnectionAuthentication {
    /// A client certificate the simulator trusts was presented.
    var hasClientCertificate = false
    /// The provider token in use on this connection, and since when.
    var currentToken: String?
    var currentTokenSince: Date?
    /// Tokens already verified on this connection, with what they say.
    var verified: [String: ProviderToken] = [:]
    /// The key id of the first token used on this connection.
    var firstKeyID: String?
}

/// APNs's checks, in APNs's order, as pure logic over one request.
struct SimulatorRules {
    var tokenKeys: [String: APNsSimulatorTokenKey]
    var acceptsAnyTokenKey: Bool
    var topics: Set<String>?
    var faults: APNsSimulatorFaults
    /// Tokens unregistered while the simulator runs (an app uninstalled), shared by every connection.
    var unregisteredLater: UnregisteredTokens

    static let minimumTokenInterval: TimeInterval = 20 * 60
    static let validPushTypes = Set(APNsPushType.allCases.map(\.rawValue))

    init(configuration: APNsSimulatorConfiguration, unregisteredLater: UnregisteredTokens = UnregisteredTokens()) {
        tokenKeys = Dictionary(configuration.tokenKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
        acceptsAnyTokenKey = configuration.acceptsAnyTokenKey
        topics = configuration.topics
        faults = configuration.faults
        self.unregisteredLater = unregisteredLater
    }

    /// - Parameters:
    ///   - roll: a number in [0, 1) for the random faults, fixed per token and attempt.
    func check(
        _ push: IncomingPush,
        authentication: inout ConnectionAuthentication,
        now: Date,
        roll: (String) -> Double
    ) -> SimulatorVerdict {
        let headers = push.headers
        let requestedID = headers.first(name: "apns-id")
        let apnsID = requestedID.flatMap(UUID.init(uuidString:)) ?? UUID()
        func reject(_ reason: APNsReason, timestamp: Date? = nil) -> SimulatorVerdict {
            .reject(status: reason.status ?? 400, reason: reason, timestamp: timestamp, apnsID: apnsID)
        }

        guard headers.first(name: ":method") == "POST" else { return reject(.methodNotAllowed) }
        guard let path = headers.first(name: ":path"), path.hasPrefix("/3/device/") else { return reject(.badPath) }
        let deviceToken = String(path.dropFirst("/3/device/".count))
        guard !deviceToken.isEmpty else { return reject(.missingDeviceToken) }
        guard DeviceTokenFormat.isValid(deviceToken) else { return reject(.badDeviceToken) }
        for name in ["authorization", "apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id"]
        where headers[name].count > 1 {
            return reject(.duplicateHeaders)
        }
        if requestedID != nil, UUID(uuidString: requestedID!) == nil { return reject(.badMessageId) }

        if let refusal = authenticate(headers.first(name: "authorization"), authentication: &authentication, now: now) {
            return .reject(
                status: refusal.reason.status ?? 403, reason: refusal.reason, timestamp: nil, apnsID: apnsID,
                explanation: refusal.explanation)
        }

        guard let topic = headers.first(name: "apns-topic"), !topic.isEmpty else { return reject(.missingTopic) }
        if let topics, !topics.contains(topic) { return reject(.topicDisallowed) }
        guard let pushType = headers.first(name: "apns-push-type"), Self.validPushTypes.contains(pushType) else {
            return reject(.invalidPushType)
        }
        let priority = headers.first(name: "apns-priority") ?? (pushType == "background" ? "5" : "10")
        guard ["10", "5", "1"].contains(priority), pushType != "background" || priority == "5" else { return reject(.badPriority) }
        if let expiration = headers.first(name: "apns-expiration"), Int64(expiration) == nil { return reject(.badExpirationDate) }
        if let collapseID = headers.first(name: "apns-collapse-id"), collapseID.utf8.count > 64 { return reject(.badCollapseId) }

        let size = push.body?.readableBytes ?? 0
        guard size > 0 else { return reject(.payloadEmpty) }
        guard size <= (pushType == "voip" ? 5120 : 4096) else { return reject(.payloadTooLarge) }
        // APNs documents no reason for a body that is not a JSON object; PayloadEmpty is the nearest.
        guard let body = push.body, body.withUnsafeReadableBytes(JSONSyntax.isObject) else { return reject(.payloadEmpty) }
        // Only an alert's aps is read; the rest of a body is checked, not built.
        if pushType == "alert" {
            let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
            if let refusal = Self.alertProblem(object?["aps"] as? [String: Any] ?? [:]) { return reject(refusal) }
        }

        let token = deviceToken.lowercased()
        if let since = unregisteredLater.since(token, configured: faults.unregisteredTokens[token]) {
            return reject(.unregistered, timestamp: since)
        }
        if faults.badDeviceTokens.contains(token) { return reject(.badDeviceToken) }
        let dice = faults.tooManyRequestsRate + faults.serviceUnavailableRate > 0 ? roll(token) : 1
        if dice < faults.tooManyRequestsRate { return reject(.tooManyRequests) }
        if dice < faults.tooManyRequestsRate + faults.serviceUnavailableRate { return reject(.serviceUnavailable) }
        return .accept(deviceToken: token, apnsID: apnsID)
    }

    /// What is wrong with the `aps` of an alert push, if anything: it must
    /// show something (an alert, a sound or a badge), and `mutable-content`,
    /// which hands it to the app's Notification Service Extension, needs an
    /// alert. APNs documents no reason for either; InvalidPushType says the
    /// push type does not fit the payload.
    static func alertProblem(_ aps: [String: Any]) -> APNsReason? {
        guard ["alert", "sound", "badge"].contains(where: { aps[$0] != nil }) else { return .invalidPushType }
        if (aps["mutable-content"] as? NSNumber)?.intValue == 1, aps["alert"] == nil { return .invalidPushType }
        return nil
    }

    /// Nil when the request may go on; otherwise why it is refused.
    private func authenticate(
        _ authorization: String?,
        authentication: inout ConnectionAuthentication,
        now: Date
    ) -> ProviderTokenRefusal? {
        guard let authorization else {
            return authentication.hasClientCertificate
                ? nil : ProviderTokenRefusal(.missingProviderToken, "no authorization header and no client certificate")
        }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            return ProviderTokenRefusal("the authorization header is not \"bearer <token>\"")
        }
        let token = String(authorization.dropFirst(7))
        let claims: ProviderToken
        do throws(ProviderTokenRefusal) {
            if let known = authentication.verified[token] {
                claims = known
            } else {
                claims = try ProviderTokenCheck.verify(token[...], keys: tokenKeys, acceptsAnyKey: acceptsAnyTokenKey)
                if authentication.verified.count > 8 { authentication.verified.removeAll() }
                authentication.verified[token] = claims
            }
            try ProviderTokenCheck.checkAge(claims, now: now)
        } catch {
            return error
        }
        if let first = authentication.firstKeyID, first != claims.keyID {
            return ProviderTokenRefusal(
                .unrelatedKeyIdInToken, "key \(claims.keyID) on a connection whose first push used key \(first): open a new connection")
        }
        authentication.firstKeyID = claims.keyID
        if token != authentication.currentToken {
            if let since = authentication.currentTokenSince, now.timeIntervalSince(since) < Self.minimumTokenInterval {
                return ProviderTokenRefusal(
                    .tooManyProviderTokenUpdates,
                    "a new token within 20 minutes of the last on this connection")
            }
            authentication.currentToken = token
            authentication.currentTokenSince = now
        }
        return nil
    }
}

enum DeviceTokenFormat {
    static func isValid(_ token: String) -> Bool {
        token.utf8.count.isMultiple(of: 2)
            && token.utf8.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0)
            }
    }
}

/// Tokens that became invalid, or valid again, while the simulator runs.
final class UnregisteredTokens: Sendable {
    /// Since when a token is invalid; nil for one registered again.
    private let tokens = NIOLockedValueBox<[String: Date?]>([:])

    func add(_ token: String, since: Date) {
        tokens.withLockedValue { $0[token.lowercased()] = .some(since) }
    }

    func registerAgain(_ token: String) {
        tokens.withLockedValue { $0[token.lowercased()] = .some(nil) }
    }

    /// Since when `token` is invalid: as changed while running, else as `configured`.
    func since(_ token: String, configured: Date?) -> Date? {
        tokens.withLockedValue { tokens in
            guard !tokens.isEmpty, let changed = tokens[token] else { return configured }
            return changed
        }
    }
}
