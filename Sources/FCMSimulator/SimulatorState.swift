import Foundation
import NIOConcurrencyHelpers

/// The simulator's memory: issued access tokens, scripted faults, inboxes and counts.
final class SimulatorState: Sendable {
    struct AccessToken {
        var clientEmail: String
        var projectID: String
        var expiresAt: Date
    }

    private struct Contents {
        var accessTokens: [String: AccessToken] = [:]
        var scripts: [String: [FCMFault]] = [:]
        var unregistered: Set<String> = []
        var inboxes: [String: [FCMReceivedMessage]] = [:]
        var statistics = FCMSimulatorStatistics()
        var nextMessageID: UInt64 = 1
    }

    private let contents = NIOLockedValueBox(Contents())
    let recordsInbox: Bool

    init(recordsInbox: Bool) {
        self.recordsInbox = recordsInbox
    }

    func issue(_ token: AccessToken) -> String {
        let value = "ya29.sim-" + UUID().uuidString.lowercased()
        contents.withLockedValue {
            $0.accessTokens[value] = token
            $0.statistics.accessTokensIssued += 1
        }
        return value
    }

    func accessToken(_ value: String) -> AccessToken? {
        contents.withLockedValue { $0.accessTokens[value] }
    }

    func revokeAccessTokens() {
        contents.withLockedValue { $0.accessTokens = [:] }
    }

    func countRefusedTokenRequest() {
        contents.withLockedValue { $0.statistics.tokenRequestsRefused += 1 }
    }

    func script(_ faults: [FCMFault], for token: String) {
        contents.withLockedValue { $0.scripts[token, default: []] += faults }
    }

    func unregister(_ token: String) {
        contents.withLockedValue { _ = $0.unregistered.insert(token) }
    }

    /// The fault this message to `token` meets, if any: an unregistered token's, or the next scripted one.
    func nextFault(for token: String) -> FCMFault? {
        contents.withLockedValue { contents in
            if contents.unregistered.contains(token) { return .unregistered }
            guard var script = contents.scripts[token], !script.isEmpty else { return nil }
            let fault = script.removeFirst()
            contents.scripts[token] = script.isEmpty ? nil : script
            return fault
        }
    }

    func countHTTP1Message() {
        contents.withLockedValue { $0.statistics.messagesOverHTTP1 += 1 }
    }

    func countRejected(_ code: String) {
        contents.withLockedValue { $0.statistics.messagesRejected[code, default: 0] += 1 }
    }

    /// Keeps an accepted message; returns its id.
    func accept(_ message: ValidatedMessage, project: String, at date: Date) -> UInt64 {
        contents.withLockedValue { contents in
            let id = contents.nextMessageID
            contents.nextMessageID += 1
            contents.statistics.messagesAccepted += 1
            if recordsInbox {
                let received = FCMReceivedMessage(
                    token: message.token, project: project, data: message.data, apnsHeaders: message.apnsHeaders,
                    androidPriority: message.androidPriority, androidNotification: message.androidNotification,
                    userInfoJSON: message.userInfoJSON(messageID: "0:\(id)"), receivedAt: date)
                contents.inboxes[message.token, default: []].append(received)
            }
            return id
        }
    }

    func inbox(for token: String) -> [FCMReceivedMessage] {
        contents.withLockedValue { $0.inboxes[token] ?? [] }
    }

    var inboxes: [String: [FCMReceivedMessage]] { contents.withLockedValue { $0.inboxes } }

    var statistics: FCMSimulatorStatistics { contents.withLockedValue { $0.statistics } }

    func clearInbox() {
        contents.withLockedValue { $0.inboxes = [:] }
    }
}
