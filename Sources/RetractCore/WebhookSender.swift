import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// POSTs completion webhooks: one signed request per attempt, with a
/// timeout, redirects not followed (a receiver cannot send the account to
/// a host the allow-list did not let through). Owns its HTTP client:
/// ``shutdown()`` when done.
package final class WebhookSender: Sendable {
    package let settings: WebhookSettings
    private let http: HTTPClient

    /// How one POST went.
    package enum Answer: Hashable, Sendable {
        /// The receiver answered with this status.
        case status(Int)
        /// No answer: it could not connect, TLS failed, or it timed out.
        case error(String)
    }

    /// - Throws: ``RetractError/Code/invalidInput`` when a trust root is not a PEM certificate.
    package init(settings: WebhookSettings, logger: Logger = Logger(label: "retract.webhooks")) throws(RetractError) {
        let roots: [NIOSSLCertificate]
        do {
            roots = try settings.additionalTrustRootsPEM.flatMap { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) }
        } catch {
            throw RetractError(.invalidInput, "a webhook trust root is not a PEM certificate: \(error)")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if !roots.isEmpty { tls.additionalTrustRoots = [.certificates(roots)] }
        tls.minimumTLSVersion = .tlsv12
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .nanoseconds(settings.timeout.nanoseconds), read: .nanoseconds(settings.timeout.nanoseconds))
        configuration.connectionPool = .init(idleTimeout: .seconds(60))
        self.settings = settings
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger)
    }

    /// POSTs `body` to `url`, signed with `secret` at `now`.
    package func post(_ body: [UInt8], to url: String, secret: String, deliveryID: UUID, now: Date = Date()) async -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "retract-webhook/1")
        request.headers.add(name: "Retract-Event", value: WebhookEvent.finished)
        request.headers.add(name: "Retract-Delivery", value: deliveryID.uuidString.lowercased())
        let signature = WebhookSignature(body: body, secret: secret, timestamp: Int64(now.timeIntervalSince1970))
        request.headers.add(name: WebhookSignature.headerName, value: signature.header)
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: .nanoseconds(settings.timeout.nanoseconds))
            // What the receiver says is not needed; reading a little of it lets the connection be kept.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return .status(Int(response.status.code))
        } catch {
            return .error(String(describing: error).prefix(500).description)
        }
    }

    package func shutdown() async {
        try? await http.shutdown()
    }
}
