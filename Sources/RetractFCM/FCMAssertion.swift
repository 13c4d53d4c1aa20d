import Foundation
import RetractKit
import RetractPush
import _CryptoExtras

/// The JWT a service account signs (RS256) and trades at the token endpoint
/// for an OAuth2 access token: RFC 7523's `jwt-bearer` grant, as Google
/// documents it for server-to-server use.
public enum FCMAssertion {
    /// The scope an access token needs to send through FCM.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Google accepts assertions that live an hour at most.
    public static let lifetime: TimeInterval = 3600

    /// The claims of an assertion.
    public struct Claims: Hashable, Sendable {
        /// The service account's email.
        public var issuer: String
        public var scope: String
        /// The token endpoint the assertion is for.
        public var audience: String
        public var issuedAt: Date
        public var expiresAt: Date
        /// The header's `kid`, when there is one.
        public var keyID: String?

        public init(issuer: String, scope: String, audience: String, issuedAt: Date, expiresAt: Date, keyID: String?) {
            self.issuer = issuer
            self.scope = scope
            self.audience = audience
            self.issuedAt = issuedAt
            self.expiresAt = expiresAt
            self.keyID = keyID
        }
    }

    /// A signed assertion for `account`, issued at `issuedAt`.
    public static func make(for account: FCMServiceAccount, issuedAt: Date) throws -> String {
        var header = #"{"alg":"RS256","typ":"JWT""#
        if let keyID = account.privateKeyID { header += #","kid":\#(JSONText.quoted(keyID))"# }
        header += "}"
        let iat = Int64(issuedAt.timeIntervalSince1970)
        let claims =
            #"{"iss":\#(JSONText.quoted(account.clientEmail)),"scope":\#(JSONText.quoted(scope)),"#
            + #""aud":\#(JSONText.quoted(account.tokenURI)),"iat":\#(iat),"exp":\#(iat + Int64(lifetime))}"#
        return try CompactJWS.sign(header: header, claims: claims) {
            try account.privateKey.signature(for: $0, padding: .insecurePKCS1v1_5).rawRepresentation
        }
    }

    /// Why an assertion was refused.
    public enum VerificationError: Error, Hashable, Sendable {
        case malformed
        case unsupportedAlgorithm(String)
        /// No key is known for the issuer.
        case unknownIssuer(String)
        case badSignature
    }

    /// Parses `assertion` and checks its signature with the key
    /// `publicKey(issuer)` returns; what the claims say is the caller's to judge.
    public static func verify(
        _ assertion: Substring,
        publicKey: (String) -> _RSA.Signing.PublicKey?
    ) throws(VerificationError) -> Claims {
        guard let parts = CompactJWS.parse(assertion) else { throw .malformed }
        struct Header: Decodable {
            var alg: String
            var kid: String?
        }
        struct Body: Decodable {
            var iss: String
            var scope: String
            var aud: String
            var iat: Int64
            var exp: Int64
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: parts.header),
            let body = try? JSONDecoder().decode(Body.self, from: parts.claims)
        else { throw .malformed }
        guard header.alg == "RS256" else { throw .unsupportedAlgorithm(header.alg) }
        guard let key = publicKey(body.iss) else { throw .unknownIssuer(body.iss) }
        guard
            key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: parts.signature), for: parts.signingInput, padding: .insecurePKCS1v1_5)
        else { throw .badSignature }
        return Claims(
            issuer: body.iss, scope: body.scope, audience: body.aud, issuedAt: Date(timeIntervalSince1970: TimeInterval(body.iat)),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(body.exp)), keyID: header.kid)
    }
}
