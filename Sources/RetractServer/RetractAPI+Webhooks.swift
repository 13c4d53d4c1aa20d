import Foundation
import Hummingbird
import RetractCore
import RetractModel
import RetractStore

extension RetractAPI {
    /// The shortest and longest secret a caller may give, in bytes.
    static let webhookSecretLengths = 32...256
    /// The longest webhook URL.
    static let maximumWebhookURLLength = 2000

    /// `POST /v1/apps/{name}/webhook`: sets or replaces the app's completion
    /// webhook. A secret the caller does not give is made here, and shown
    /// in this answer only.
    func setWebhook(_ input: PostInput) async throws -> Answer {
        try input.caller.require(.admin)
        let given = try JSONBody.decode(WebhookBody.self, from: input.body)
        let url = try Self.webhookURL(given.url, allowed: settings.webhooks.destinations)
        var secret = WebhookSignature.makeSecret()
        if let chosen = given.secret { secret = try Self.webhookSecret(chosen) }
        let app = try await app(named: input.appName ?? "", for: input.caller, field: "name")
        let webhook = try await store.setWebhook(appID: app.id, url: url, secret: secret, actor: input.caller.actor)
        return Answer(.ok, WebhookSetView(webhook, app: app.name, secret: given.secret == nil ? secret : nil))
    }

    /// `DELETE /v1/apps/{name}/webhook`: removes it; deliveries not made yet are given up.
    func removeWebhook(appName: String, caller: Caller) async throws -> Response {
        try caller.require(.admin)
        let app = try await app(named: appName, for: caller, field: "name")
        guard try await store.removeWebhook(appID: app.id, actor: caller.actor) else {
            throw APIProblem(.notFound, "the app \"\(app.name)\" has no webhook")
        }
        return Response(status: .noContent)
    }

    /// An `https://` URL with a host, no user or fragment, on an allowed host
    /// and port; an address, if the host is one, that the settings allow.
    static func webhookURL(_ text: String, allowed destinations: WebhookDestinations) throws(APIProblem) -> String {
        guard text.utf8.count <= maximumWebhookURLLength else {
            throw APIProblem.invalid("url", "\(text.utf8.count) bytes; at most \(maximumWebhookURLLength)")
        }
        guard let url = URLComponents(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty else {
            throw APIProblem.invalid("url", "\"\(text.prefix(200))\" is not an https:// URL")
        }
        guard url.user == nil, url.password == nil, url.fragment == nil else {
            throw APIProblem.invalid("url", "an https:// URL without a user, password or #fragment")
        }
        switch destinations.refusal(of: text) {
        case nil:
            return text
        case .hostNotAllowed?:
            let hosts = destinations.allowedHosts.isEmpty ? "none is allowed yet" : destinations.allowedHosts.joined(separator: ", ")
            let port = url.port.map { ":\($0)" } ?? ""
            throw APIProblem.invalid(
                "url",
                "\"\(host.prefix(200))\(port)\" is not a host and port this server sends webhooks to (\(hosts); a host without a port "
                    + "is port 443); its operator allows others with --allowed-webhook-host")
        case let refusal?:
            throw APIProblem.invalid("url", refusal.description)
        }
    }

    /// A secret of 32 to 256 printable ASCII characters, no spaces.
    static func webhookSecret(_ text: String) throws(APIProblem) -> String {
        guard webhookSecretLengths.contains(text.utf8.count) else {
            throw APIProblem.invalid(
                "secret",
                "\(text.utf8.count) bytes; \(webhookSecretLengths.lowerBound) to \(webhookSecretLengths.upperBound), or none to have one made"
            )
        }
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw APIProblem.invalid("secret", "printable ASCII characters without spaces")
        }
        return text
    }
}

struct WebhookBody: Decodable {
    var url: String
    /// 32 to 256 bytes; made by the server when absent.
    var secret: String?
}

struct WebhookSetView: Encodable {
    var app: String
    var url: String
    /// Only when the server made it: it is not shown again.
    var secret: String?
    var createdAt: Date
    var updatedAt: Date

    init(_ webhook: AppWebhook, app: String, secret: String?) {
        self.app = app
        url = webhook.url
        self.secret = secret
        createdAt = webhook.createdAt
        updatedAt = webhook.updatedAt
    }
}
