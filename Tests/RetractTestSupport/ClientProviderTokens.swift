import Crypto
import Foundation
import RetractKit

/// A provider token laid out byte for byte as a widely used APNs client
/// writes it, to check that the simulator accepts what APNs accepts from
/// clients no one here wrote, and still refuses what APNs refuses.
package struct ClientProviderToken: Sendable, CustomStringConvertible {
    package enum SignatureEncoding: Sendable {
        /// JOSE's 64-byte `r || s`.
        case raw
        /// ASN.1 DER, as `openssl dgst -sign` writes it.
        case der
        /// An HMAC-SHA256 over the signing input with the key's bytes, as an HS256 token would carry.
        case hmac
        /// No signature at all, as an `alg: none` token has.
        case none
    }

    package var description: String
    package var header: String
    package var claims: String
    package var signature: SignatureEncoding

    package init(_ description: String, header: String, claims: String, signature: SignatureEncoding) {
        self.description = description
        self.header = header
        self.claims = claims
        self.signature = signature
    }

    /// The compact token, signed with `key`.
    package func signed(with key: P256.Signing.PrivateKey) throws -> String {
        let input = Data(header.utf8).base64URLEncodedString() + "." + Data(claims.utf8).base64URLEncodedString()
        let signatureBytes: Data
        switch signature {
        case .raw: signatureBytes = try key.signature(for: Data(input.utf8)).rawRepresentation
        case .der: signatureBytes = try key.signature(for: Data(input.utf8)).derRepresentation
        case .hmac:
            signatureBytes = Data(HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: key.rawRepresentation)))
        case .none: signatureBytes = Data()
        }
        return input + "." + signatureBytes.base64URLEncodedString()
    }

    /// APNSwift's `APNSAuthenticationTokenManager` (APNSCore): pretty-printed
    /// JSON, `typ` in the header, `kid` repeated among the claims, `iat` as a
    /// string of digits, a raw signature.
    package static func apnswift(keyID: String, teamID: String, issuedAt: Date) -> ClientProviderToken {
        ClientProviderToken(
            "APNSwift",
            header: """
                {
                    "alg": "ES256",
                    "typ": "JWT",
                    "kid": "\(keyID)"
                }
                """,
            claims: """
                {
                    "iss": "\(teamID)",
                    "iat": "\(Int64(issuedAt.timeIntervalSince1970))",
                    "kid": "\(keyID)"
                }
                """,
            signature: .raw)
    }

    /// PyJWT 2 as aioapns calls it (`jwt.encode(payload, key, "ES256",
    /// headers={"kid": ...})`): a sorted compact header with `typ`, `iat` a number.
    package static func pyjwt(keyID: String, teamID: String, issuedAt: Date) -> ClientProviderToken {
        ClientProviderToken(
            "PyJWT (aioapns)",
            header: #"{"alg":"ES256","kid":"\#(keyID)","typ":"JWT"}"#,
            claims: #"{"iss":"\#(teamID)","iat":\#(Int64(issuedAt.timeIntervalSince1970))}"#,
            signature: .raw)
    }

    /// The shell recipe of Apple's "Sending push notifications using
    /// command-line tools": JSON with spaces, and the DER signature that
    /// `openssl dgst -sha256 -sign` writes.
    package static func appleCommandLine(keyID: String, teamID: String, issuedAt: Date) -> ClientProviderToken {
        ClientProviderToken(
            "Apple's command-line recipe (openssl, DER signature)",
            header: #"{ "alg": "ES256", "kid": "\#(keyID)" }"#,
            claims: #"{ "iss": "\#(teamID)", "iat": \#(Int64(issuedAt.timeIntervalSince1970)) }"#,
            signature: .der)
    }

    /// The layout of Apple's documentation, compact.
    package static func documented(
        keyID: String, teamID: String, issuedAt: Date, algorithm: String = "ES256", signature: SignatureEncoding = .raw
    ) -> ClientProviderToken {
        ClientProviderToken(
            "documented",
            header: #"{"alg":"\#(algorithm)","kid":"\#(keyID)"}"#,
            claims: #"{"iss":"\#(teamID)","iat":\#(Int64(issuedAt.timeIntervalSince1970))}"#,
            signature: signature)
    }

    /// This token with another description, header or claims.
    package func with(_ description: String, header: String? = nil, claims: String? = nil) -> ClientProviderToken {
        ClientProviderToken(description, header: header ?? self.header, claims: claims ?? self.claims, signature: signature)
    }
}
