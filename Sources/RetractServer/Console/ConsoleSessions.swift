import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import RetractModel
import RetractStore

/// How the console signs a browser in: the API key is checked once and kept
/// server-side (its id, in the ledger); the browser holds a random session id
/// in a `__Host-` cookie, Secure, HttpOnly and SameSite=Strict (without the
/// prefix and Secure only under `--console-plain-http`, for development over
/// plain HTTP), and every form carries the session's own token.
struct ConsoleSessions: Sendable {
    /// How long a sign-in lasts.
    static let lifetime: Duration = .seconds(8 * 3600)

    /// The session cookie's name. `__Host-` makes a browser take the cookie
    /// only from a secure origin, for the whole host (`Path=/`), never for a
    /// sibling domain, so another site on the same domain cannot plant one.
    /// Over plain HTTP another name: a `retract_console` cookie of an earlier
    /// version (`Path=/console`) would be sent first and shadow it.
    static func cookieName(plainHTTP: Bool) -> String { plainHTTP ? "retract_console_plain" : "__Host-retract_console" }
    /// Before sign-in, the sign-in form's token is checked against this cookie (double submit).
    static func signInCookieName(plainHTTP: Bool) -> String {
        plainHTTP ? "retract_console_plain_signin" : "__Host-retract_console_signin"
    }

    let store: RetractStore
    /// Cookies without `Secure` and the `__Host-` prefix (`--console-plain-http`).
    let plainHTTP: Bool

    var cookieName: String { Self.cookieName(plainHTTP: plainHTTP) }
    var signInCookieName: String { Self.signInCookieName(plainHTTP: plainHTTP) }

    /// A signed-in browser: the key it signed in with, as the ledger has it now.
    struct SignedIn: Sendable {
        var caller: Caller
        var formToken: String
        var sessionHash: [UInt8]
    }

    /// The session the request's cookie names, if it is current and its key
    /// is not revoked.
    func signedIn(_ request: Request) async throws -> SignedIn? {
        guard let id = Self.cookie(cookieName, in: request), Self.isWellFormedSecret(id) else { return nil }
        let hash = Self.hash(id)
        guard let session = try await store.consoleSession(idHash: hash), session.key.revokedAt == nil else { return nil }
        return SignedIn(caller: Caller(key: session.key), formToken: session.formToken, sessionHash: hash)
    }

    /// Keeps a new session for `key`: the cookie to set.
    func start(for key: APIKeyRecord) async throws -> String {
        let id = Self.randomSecret()
        let expires = Date().addingTimeInterval(Self.lifetime.inSeconds)
        try await store.createConsoleSession(idHash: Self.hash(id), keyID: key.id, formToken: Self.randomSecret(), expiresAt: expires)
        return setCookie(cookieName, id, maxAge: Self.lifetime)
    }

    func end(_ signedIn: SignedIn) async throws -> String {
        try await store.deleteConsoleSession(idHash: signedIn.sessionHash)
        return setCookie(cookieName, "", maxAge: .zero)
    }

    // MARK: - Cookies and tokens

    /// 256 random bits, base64url: 43 characters.
    static func randomSecret() -> String { APIKeySecret.randomBase64URL() }

    static func isWellFormedSecret(_ text: String) -> Bool { APIKeySecret.isRandomBase64URL(text) }

    static func hash(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Data(secret.utf8))) }

    /// Whether a form's token is the expected one, in time that does not depend on where they differ.
    static func tokensMatch(_ given: String?, _ expected: String) -> Bool {
        guard let given else { return false }
        return APIKeySecret.constantTimeEqual(Array(SHA256.hash(data: Data(given.utf8))), Array(SHA256.hash(data: Data(expected.utf8))))
    }

    /// The value of cookie `name` in the request's `Cookie` headers.
    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    func setCookie(_ name: String, _ value: String, maxAge: Duration) -> String {
        let cookie = "\(name)=\(value); Path=/; Max-Age=\(Int(maxAge.inSeconds)); HttpOnly; SameSite=Strict"
        return plainHTTP ? cookie : cookie + "; Secure"
    }
}
