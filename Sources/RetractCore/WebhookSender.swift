import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// POSTs completion webhooks: one signed request per attempt, with a
/// timeout, redirects not followed (a receiver cannot send the account to
/// a host the allow-list did not let through). Before each attempt the
/// destination is checked again (``WebhookDestinations``) and the host
/// resolved; the attempt connects to the address that was checked, with
/// TLS still verified for the host's name. Holds no connection between attempts.
package final class WebhookSender: Sendable {
    package let settings: WebhookSettings
    private let configuration: HTTPClient.Configuration
    private let logger: Logger

    /// How one POST went.
    package enum Answer: Hashable, Sendable {
        /// The receiver answered with this status.
        case status(Int)
        /// No answer, or not sent at all.
        case failed(WebhookFailure)
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
        self.settings = settings
        self.configuration = configuration
        self.logger = logger
    }

    /// POSTs `body` to `url`, signed with `secret` at `now`, if the
    /// destination is still allowed.
    package func post(_ body: [UInt8], to url: String, secret: String, deliveryID: UUID, now: Date = Date()) async -> Answer {
        let (target, addresses): (WebhookDestinations.Target, [IPAddress])
        switch await settings.destinations.addresses(for: url, timeout: settings.timeout) {
        case .success(let checked): (target, addresses) = checked
        case .failure(let refusal): return .failed(refusal)
        }
        var answer = Answer.failed(.hostNotFound)
        // Each checked address in turn while none can be connected to, as a resolver's list is meant to be tried.
        for address in addresses {
            answer = await post(body, to: url, at: address, of: target, secret: secret, deliveryID: deliveryID, now: now)
            guard case .failed(let failure) = answer, failure.triesNextAddress else { break }
        }
        return answer
    }

    private func post(
        _ body: [UInt8], to url: String, at address: IPAddress, of target: WebhookDestinations.Target, secret: String, deliveryID: UUID,
        now: Date
    ) async -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "retract-webhook/1")
        request.headers.add(name: "Retract-Event", value: WebhookEvent.finished)
        request.headers.add(name: "Retract-Delivery", value: deliveryID.uuidString.lowercased())
        let signature = WebhookSignature(body: body, secret: secret, timestamp: Int64(now.timeIntervalSince1970))
        request.headers.add(name: WebhookSignature.headerName, value: signature.header)
        request.body = .bytes(ByteBuffer(bytes: body))
        // A client for this attempt, connecting to the checked address: AsyncHTTPClient's
        // dnsOverride is per client. One webhook per retraction makes the handshake's cost nothing.
        var configuration = configuration
        if target.literal == nil { configuration.dnsOverride = [target.host: "\(address)"] }
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger)
        let answer: Answer
        do {
            let response = try await http.execute(request, timeout: .nanoseconds(settings.timeout.nanoseconds))
            // What the receiver says is not needed; reading a little of it ends the exchange cleanly.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            answer = .status(Int(response.status.code))
        } catch {
            logger.debug("a webhook attempt failed", metadata: ["error": "\(String(reflecting: error))"])
            answer = .failed(WebhookFailure.classify(error))
        }
        try? await http.shutdown()
        return answer
    }
}
