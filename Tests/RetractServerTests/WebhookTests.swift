import Crypto
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import RetractTestSupport
import Testing

/// Completion webhooks end to end: set over the API, queued by the ledger
/// when a retraction ends, POSTed by the server's workers to a real HTTPS
/// receiver, and shown by `GET /v1/retractions/{id}`.
@Suite("Completion webhooks")
struct WebhookTests {
    /// A test secret of 40 bytes.
    static let secret = "test-secret-0123456789-abcdefghijklmnopq"

    /// The stage's settings, with the receiver's host allowed and its authority
    /// trusted, and retries in fractions of a second.
    static func settings(trusting receiver: WebhookReceiver) -> ServerSettings {
        ServerSettings(
            port: 0, healthInterval: .milliseconds(200), allowedEndpoints: ServerSettings.pushServiceHosts + ["127.0.0.1"],
            credentialsDirectory: FileManager.default.temporaryDirectory.path,
            webhooks: WebhookSettings(
                destinations: WebhookDestinations(allowedHosts: ["127.0.0.1:\(receiver.port)"]), additionalTrustRootsPEM: [receiver.caPEM],
                timeout: .seconds(5),
                retryPolicy: RetryPolicy(baseDelay: .milliseconds(300), maximumDelay: .seconds(1)), poll: .milliseconds(100)))
    }

    /// Sets `chat`'s webhook to the receiver with ``secret``.
    static func setWebhook(_ stage: APIStage, to receiver: WebhookReceiver) async throws {
        let admin = try await stage.key([.admin], apps: [])
        let set = try await stage.call(
            "POST", "/v1/apps/chat/webhook", key: admin, body: #"{"url":"\#(receiver.url)","secret":"\#(secret)"}"#)
        #expect(set.status == 200, "\(set)")
        #expect(set.json?["url"] as? String == receiver.url)
        // A secret the caller chose is not echoed.
        #expect(set.json?["secret"] == nil)
    }

    /// Records `devices` devices for `reference` and retracts it; returns the retraction's id.
    static func retract(_ reference: String, devices: Int, stage: APIStage, key: String, dryRun: Bool = false) async throws -> String {
        let recorded = try await stage.call(
            "POST", "/v1/deliveries", key: key,
            body: #"{"app":"chat","reference":"\#(reference)","tokens":\#(APIStage.hex(TestTokens.tokens(0..<devices)))}"#)
        #expect(recorded.status == 201, "\(recorded)")
        let made = try await stage.call(
            "POST", "/v1/retractions", key: key, body: #"{"app":"chat","references":["\#(reference)"],"dryRun":\#(dryRun)}"#)
        #expect(made.status == 202, "\(made)")
        return try #require(made.json?["id"] as? String)
    }

    /// The HMAC a receiver computes: HMAC-SHA256(secret, "<t>.<body>"), in hex.
    static func expectedSignature(body: [UInt8], timestamp: String, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(timestamp).".utf8) + body, using: SymmetricKey(data: Array(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Checks one request as a receiver would: the signature over its raw
    /// body with the secret, and a recent timestamp.
    static func verify(_ request: WebhookReceiver.Received, secret: String = secret) throws {
        let header = try #require(request.headers["retract-signature"])
        var fields: [String: String] = [:]
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
        }
        let timestamp = try #require(fields["t"])
        let seconds = try #require(Double(timestamp))
        #expect(abs(Date().timeIntervalSince1970 - seconds) < 60, "the signature's time is not recent: \(timestamp)")
        #expect(fields["v1"] == expectedSignature(body: request.body, timestamp: timestamp, secret: secret))
        // Signed with another secret, it would not verify.
        #expect(fields["v1"] != expectedSignature(body: request.body, timestamp: timestamp, secret: secret + "x"))
    }

    @Test func aFinishedRetractionIsPostedOnceSignedWithTheAppsSecret() async throws {
        try await WebhookReceiver.with { receiver in
            try await APIStage.with(settings: Self.settings(trusting: receiver)) { stage in
                try await Self.setWebhook(stage, to: receiver)
                let key = try await stage.chatKey()
                let id = try await Self.retract("msg-1", devices: 3, stage: stage, key: key)
                let status = try await stage.waitUntilDone(id, key: key)

                let request = try #require(try await receiver.waitForRequests(1).first)
                #expect(request.method == "POST")
                #expect(request.path == "/hooks/retract")
                #expect(request.headers["content-type"] == "application/json")
                #expect(request.headers["retract-event"] == "retraction.finished")
                try Self.verify(request)
                let body = try #require(request.json)
                #expect(body["event"] as? String == "retraction.finished")
                #expect(body["deliveryId"] as? String == request.headers["retract-delivery"])
                let account = try #require(body["retraction"] as? [String: Any])
                #expect(account["id"] as? String == id)
                #expect(account["app"] as? String == "chat")
                #expect(account["state"] as? String == "done")
                #expect(account["total"] as? Int == 3)
                #expect(account["sent"] as? Int == 3)
                #expect(account["pending"] as? Int == 0)
                #expect(account["finishedAt"] as? String == status["finishedAt"] as? String)
                #expect(account["webhook"] == nil)

                let shown = try await stage.http.poll("/v1/retractions/\(id)", key: key) {
                    ($0.json?["webhook"] as? [String: Any])?["state"] as? String == "delivered"
                }
                let webhook = try #require(shown.json?["webhook"] as? [String: Any])
                // Its host, not its path or query, where a receiver's secret may be.
                #expect(webhook["url"] as? String == "https://127.0.0.1:\(receiver.port)/…")
                #expect(webhook["attempts"] as? Int == 1)
                #expect(webhook["lastStatus"] as? Int == 200)
                #expect(webhook["deliveredAt"] is String)
                #expect(webhook["nextAttemptAt"] == nil)
                // Once delivered, it is not sent again.
                try await Task.sleep(for: .milliseconds(500))
                #expect(receiver.received.count == 1)
            }
        }
    }

    @Test func aReceiverAnswering500IsTriedAgainWithBackoffUntilItTakesIt() async throws {
        try await WebhookReceiver.with(answers: [500, 500]) { receiver in
            try await APIStage.with(settings: Self.settings(trusting: receiver)) { stage in
                try await Self.setWebhook(stage, to: receiver)
                let key = try await stage.chatKey()
                let id = try await Self.retract("msg-2", devices: 2, stage: stage, key: key)
                _ = try await stage.waitUntilDone(id, key: key)

                let requests = try await receiver.waitForRequests(3)
                #expect(requests.count == 3)
                // Every attempt is signed afresh, for the same delivery.
                for request in requests { try Self.verify(request) }
                #expect(Set(requests.map { $0.headers["retract-delivery"] }).count == 1)
                for (earlier, later) in zip(requests, requests.dropFirst()) { #expect(later.receivedAt >= earlier.receivedAt) }

                let shown = try await stage.http.poll("/v1/retractions/\(id)", key: key) {
                    ($0.json?["webhook"] as? [String: Any])?["state"] as? String == "delivered"
                }
                let webhook = try #require(shown.json?["webhook"] as? [String: Any])
                #expect(webhook["attempts"] as? Int == 3)
                #expect(webhook["lastStatus"] as? Int == 200)
                #expect(webhook["lastError"] == nil)
                let retractionID = try #require(UUID(uuidString: id))
                let delivery = try #require(try await stage.store.webhookDelivery(retractionID: retractionID))
                #expect(delivery.state == .delivered)
                #expect(delivery.attempts == 3)
                // The console's page of the retraction says the same.
                _ = try await stage.key([.read], apps: [stage.chat], name: "moderator")
                let session = try await ConsoleTests.session(stage, keyName: "moderator")
                let page = try await stage.http.call("GET", "/console/retractions/\(id)", headers: ["Cookie": session.cookie])
                #expect(page.text.contains("Delivered to https://127.0.0.1:\(receiver.port)/… at "), "\(page)")
                #expect(page.text.contains("UTC after 3 attempts."))
            }
        }
    }

    @Test func aDryRunCallsNoWebhook() async throws {
        try await WebhookReceiver.with { receiver in
            try await APIStage.with(settings: Self.settings(trusting: receiver)) { stage in
                try await Self.setWebhook(stage, to: receiver)
                let key = try await stage.chatKey()
                let dryRun = try await Self.retract("msg-3", devices: 2, stage: stage, key: key, dryRun: true)
                let status = try await stage.waitUntilDone(dryRun, key: key)
                #expect(status["dryRun"] as? Bool == true)
                #expect(status["webhook"] == nil)
                #expect(try await stage.count("SELECT count(*) FROM webhook_deliveries WHERE retraction_id = '\(dryRun)'") == 0)

                // A real retraction after it is delivered: had the dry run queued a call, it would have come first.
                let real = try await Self.retract("msg-3", devices: 2, stage: stage, key: key)
                _ = try await receiver.waitForRequests(1)
                // Several polls of the webhook loop later, still that one call only.
                try await Task.sleep(for: .milliseconds(600))
                let received = receiver.received
                #expect(received.count == 1)
                let account = received.first?.json?["retraction"] as? [String: Any]
                #expect(account?["id"] as? String == real)
                #expect(account?["dryRun"] as? Bool == false)
            }
        }
    }

    /// The webhook of `chat` as `GET /v1/retractions/{id}` shows it, once `done` holds of it.
    static func webhook(
        of id: String, stage: APIStage, key: String, until done: @escaping ([String: Any]) -> Bool
    ) async throws
        -> [String: Any]
    {
        let shown = try await stage.http.poll("/v1/retractions/\(id)", key: key) { answer in
            (answer.json?["webhook"] as? [String: Any]).map(done) ?? false
        }
        return try #require(shown.json?["webhook"] as? [String: Any])
    }

    @Test func theDestinationIsCheckedAgainBeforeEveryAttemptAndFailuresAreClassified() async throws {
        try await WebhookReceiver.with { receiver in
            // The receiver's name and a closed port are allowed; the receiver's address only on 443.
            let closed = try freePort()
            var settings = Self.settings(trusting: receiver)
            settings.webhooks.destinations.allowedHosts = ["127.0.0.1", "localhost:\(receiver.port)", "127.0.0.1:\(closed)"]
            try await APIStage.with(settings: settings) { stage in
                let admin = try await stage.key([.admin], apps: [])
                let key = try await stage.chatKey()
                func set(_ url: String) async throws -> HTTPAnswer {
                    try await stage.call(
                        "POST", "/v1/apps/chat/webhook", key: admin, body: #"{"url":"\#(url)","secret":"\#(Self.secret)"}"#)
                }
                // An entry without a port is port 443, not every port.
                let portless = try await set(receiver.url)
                #expect(portless.status == 422 && portless.field == "url" && portless.text.contains("port 443"), "\(portless)")

                // A webhook set while its host was allowed, then taken off the list: the delivery is given up, nothing is sent.
                _ = try await stage.store.setWebhook(appID: stage.chat.id, url: receiver.url, secret: Self.secret, actor: "test")
                let offList = try await Self.retract("m-1", devices: 1, stage: stage, key: key)
                let givenUp = try await Self.webhook(of: offList, stage: stage, key: key) { $0["state"] as? String == "gave-up" }
                #expect(givenUp["lastError"] as? String == "not sent: 127.0.0.1:\(receiver.port) is not on --allowed-webhook-host")

                // A name on the list that resolves to loopback (DNS rebinding, a metadata address): given up, never contacted.
                let byName = "https://localhost:\(receiver.port)/hooks/retract"
                #expect(try await set(byName).status == 200)
                let rebound = try await Self.retract("m-2", devices: 1, stage: stage, key: key)
                let refused = try await Self.webhook(of: rebound, stage: stage, key: key) { $0["state"] as? String == "gave-up" }
                #expect(
                    (refused["lastError"] as? String)?.hasPrefix("not sent: localhost resolves to a loopback address") == true, "\(refused)"
                )
                #expect(refused["attempts"] as? Int == 1)

                // A port nobody listens on: a short, classified error, tried again.
                #expect(try await set("https://127.0.0.1:\(closed)/hooks/retract").status == 200)
                let down = try await Self.retract("m-3", devices: 1, stage: stage, key: key)
                let failing = try await Self.webhook(of: down, stage: stage, key: key) { ($0["attempts"] as? Int ?? 0) >= 2 }
                #expect(failing["state"] as? String == "retrying" && failing["lastError"] as? String == "connection refused", "\(failing)")
                #expect(receiver.received.isEmpty, "a refused destination was contacted")
            }
            // The operator allows the loopback range: the name is delivered, to the address checked, TLS checked for the name.
            settings.webhooks.destinations.allowedNetworks = [IPNetwork("127.0.0.0/8")!, IPNetwork("::1")!]
            try await APIStage.with(settings: settings) { stage in
                let key = try await stage.chatKey()
                _ = try await stage.store.setWebhook(
                    appID: stage.chat.id, url: "https://localhost:\(receiver.port)/hooks/retract", secret: Self.secret, actor: "test")
                let id = try await Self.retract("m-4", devices: 1, stage: stage, key: key)
                let delivered = try await Self.webhook(of: id, stage: stage, key: key) { $0["state"] as? String == "delivered" }
                #expect(delivered["lastStatus"] as? Int == 200)
                #expect(try await receiver.waitForRequests(1).count == 1)
            }
        }
    }

    @Test func badWebhookSettingsAreRefusedNamingTheFieldAndNothingIsWritten() async throws {
        try await WebhookReceiver.with { receiver in
            try await APIStage.with(settings: Self.settings(trusting: receiver)) { stage in
                let admin = try await stage.key([.admin], apps: [])
                let cases: [(body: String, status: Int, field: String)] = [
                    (#"{"url":"http://127.0.0.1:\#(receiver.port)/hook","secret":"\#(Self.secret)"}"#, 422, "url"),
                    (#"{"url":"https://hooks.example.com/retract","secret":"\#(Self.secret)"}"#, 422, "url"),
                    (#"{"url":"https://user:pw@127.0.0.1/hook","secret":"\#(Self.secret)"}"#, 422, "url"),
                    (#"{"url":"not a url","secret":"\#(Self.secret)"}"#, 422, "url"),
                    (#"{"url":"\#(receiver.url)","secret":"too-short"}"#, 422, "secret"),
                    (#"{"url":"\#(receiver.url)","secret":"with spaces with spaces with spaces 0123"}"#, 422, "secret"),
                    (#"{"secret":"\#(Self.secret)"}"#, 400, "url"),
                    (#"{"url":42}"#, 400, "url"),
                ]
                for (body, status, field) in cases {
                    let answer = try await stage.call("POST", "/v1/apps/chat/webhook", key: admin, body: body)
                    #expect(answer.status == status, "\(body): \(answer)")
                    #expect(answer.field == field, "\(body): \(answer)")
                }
                #expect(try await stage.store.webhook(appID: stage.chat.id) == nil)
                #expect(try await stage.store.auditLog(appID: stage.chat.id).contains { $0.action.hasPrefix("webhook.") } == false)

                // Not an admin: refused; an app the key cannot see: 404.
                let chatKey = try await stage.chatKey()
                let refused = try await stage.call(
                    "POST", "/v1/apps/chat/webhook", key: chatKey, body: #"{"url":"\#(receiver.url)"}"#)
                #expect(refused.status == 403, "\(refused)")
                let unknown = try await stage.call("POST", "/v1/apps/nope/webhook", key: admin, body: #"{"url":"\#(receiver.url)"}"#)
                #expect(unknown.status == 404, "\(unknown)")
                #expect(unknown.field == "name")
            }
        }
    }

    @Test func aWebhookWithoutASecretGetsOneMadeOnceAndChangesAreAudited() async throws {
        try await WebhookReceiver.with { receiver in
            try await APIStage.with(settings: Self.settings(trusting: receiver)) { stage in
                let admin = try await stage.key([.admin], apps: [])
                let set = try await stage.call("POST", "/v1/apps/chat/webhook", key: admin, body: #"{"url":"\#(receiver.url)"}"#)
                #expect(set.status == 200, "\(set)")
                let secret = try #require(set.json?["secret"] as? String)
                #expect(secret.hasPrefix("whsec_") && secret.utf8.count == 6 + 64)
                #expect(try await stage.store.webhook(appID: stage.chat.id)?.secret == secret)

                // The made secret signs the deliveries.
                let key = try await stage.chatKey()
                _ = try await Self.retract("msg-4", devices: 1, stage: stage, key: key)
                try Self.verify(try #require(try await receiver.waitForRequests(1).first), secret: secret)

                let removed = try await stage.call("DELETE", "/v1/apps/chat/webhook", key: admin)
                #expect(removed.status == 204, "\(removed)")
                let again = try await stage.call("DELETE", "/v1/apps/chat/webhook", key: admin)
                #expect(again.status == 404, "\(again)")

                let audit = try await stage.store.auditLog(appID: stage.chat.id).filter { $0.action.hasPrefix("webhook.") }
                #expect(audit.map(\.action) == ["webhook.removed", "webhook.set"])
                #expect(audit.allSatisfy { $0.details == ["url": receiver.url] && $0.subject == "chat" })
                #expect(!audit.contains { $0.details.values.contains(secret) })
            }
        }
    }
}
