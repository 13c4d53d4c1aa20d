import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat

/// OAuth2 access tokens for one service account: fetched with a signed
/// assertion, kept until shortly before they expire, and fetched once for
/// all the requests that need one at the same moment.
actor FCMAccessTokens {
    private struct Token {
        var value: String
        var expiresAt: Date
        /// When to fetch the next one: the refresh margin before expiry, or
        /// half-way for a token that lives less than twice the margin.
        var refreshAt: Date
    }

    private let account: FCMServiceAccount
    private let tokenURI: String
    private let http: HTTPClient
    private let configuration: FCMClientConfiguration
    private let logger: Logger
    private var current: Token? {
        didSet { usable.withLockedValue { $0 = current.map { ($0.value, $0.refreshAt) } } }
    }
    /// The current token and when to replace it, readable without a hop to
    /// the actor: every message needs it, a fetch happens once an hour.
    private nonisolated let usable = NIOLockedValueBox<(value: String, refreshAt: Date)?>(nil)
    private var fetching: Task<Token, any Error>?

    init(account: FCMServiceAccount, tokenURI: String, http: HTTPClient, configuration: FCMClientConfiguration, logger: Logger) {
        self.account = account
        self.tokenURI = tokenURI
        self.http = http
        self.configuration = configuration
        self.logger = logger
    }

    /// A token that is good for at least the refresh margin; when getting a
    /// new one fails, the old one while it has not expired.
    func token() async throws(FCMError) -> String {
        if let current, configuration.now() < current.refreshAt {
            return current.value
        }
        let task: Task<Token, any Error>
        if let fetching {
            task = fetching
        } else {
            task = Task { try await self.fetch() }
            fetching = task
        }
        do {
            let token = try await task.value
            if fetching == task {
                current = token
                fetching = nil
            }
            return token.value
        } catch {
            if fetching == task { fetching = nil }
            // A token endpoint that fails for a moment costs nothing while the token in hand lasts.
            if let current, configuration.now() < current.expiresAt {
                logger.warning("FCM access token not renewed; the current one is used until it expires", metadata: ["error": "\(error)"])
                return current.value
            }
            throw error as? FCMError ?? .accessTokenRefused(status: nil, reason: "\(error)")
        }
    }

    /// The current token while it needs no replacing, read without waiting
    /// for the actor; nil when ``token()`` has to be asked.
    nonisolated func fresh() -> String? {
        guard let (value, refreshAt) = usable.withLockedValue({ $0 }), configuration.now() < refreshAt else { return nil }
        return value
    }

    /// Forgets `value` after the send endpoint refused it, so the next call fetches another.
    func invalidate(_ value: String) {
        if current?.value == value { current = nil }
    }

    private func fetch() async throws(FCMError) -> Token {
        let issuedAt = configuration.now()
        let assertion: String
        do {
            assertion = try FCMAssertion.make(for: account, issuedAt: issuedAt)
        } catch {
            throw .accessTokenRefused(status: nil, reason: "the assertion cannot be signed: \(error)")
        }
        var request = HTTPClientRequest(url: tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let status: Int
        let body: ByteBuffer
        do {
            let response = try await http.execute(request, timeout: configuration.requestTimeout)
            status = Int(response.status.code)
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            switch FCMError(sending: error) {
            case .unreachable(let problem): throw .unreachable("the token endpoint \(tokenURI): \(problem)")
            default: throw .accessTokenRefused(status: nil, reason: "\(tokenURI): \(error)")
            }
        }
        struct Answer: Decodable {
            var access_token: String?
            var expires_in: Int?
            var error: String?
            var error_description: String?
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: body)
        guard status == 200, let value = answer?.access_token, !value.isEmpty, let lifetime = answer?.expires_in, lifetime > 0 else {
            let reason = [answer?.error, answer?.error_description].compactMap { $0 }.joined(separator: ": ")
            throw .accessTokenRefused(status: status, reason: reason.isEmpty ? "no access token in the answer" : reason)
        }
        logger.debug("FCM access token fetched", metadata: ["account": "\(account.clientEmail)", "expires_in": "\(lifetime)"])
        let margin = min(configuration.tokenRefreshMargin, TimeInterval(lifetime) / 2)
        return Token(
            value: value, expiresAt: issuedAt.addingTimeInterval(TimeInterval(lifetime)),
            refreshAt: issuedAt.addingTimeInterval(TimeInterval(lifetime) - margin))
    }
}
