import Crypto
import Foundation
import RetractKit
import RetractPush

/// The provider authentication token APNs expects: an ES256 JWT with the key
/// id in its header and the team id and issue time in its claims.
public enum APNsJWT {
    /// A signed token, ready for `authorization: bearer <token>`.
    public static func make(key: APNsSigningKey, keyID: String, teamID: String, issuedAt: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":\#(JSONText.quoted(keyID))}"#
        let claims = #"{"iss":\#(JSONText.quoted(teamID)),"iat":\#(Int64(issuedAt.timeIntervalSince1970))}"#
        return try CompactJWS.sign(header: header, claims: claims) { try key.privateKey.signature(for: $0).rawRepresentation }
    }

    /// What a token says, once its signature has been checked.
    public struct Claims: Hashable, Sendable {
        public var keyID: String
        public var teamID: String
        public var issuedAt: Date

        public init(keyID: String, teamID: String, issuedAt: Date) {
            self.keyID = keyID
            self.teamID = teamID
            self.issuedAt = issuedAt
        }
    }

    /// Why a token was refused.
    public enum VerificationError: Error, Hashable, Sendable {
        case malformed
        case unsupportedAlgorithm
        case unknownKey(String)
        case badSignature
    }

    /// Parses and verifies `token` with the public key `publicKey(keyID)` returns.
    public static func verify(
        _ token: Substring,
        publicKey: (String) -> P256.Signing.PublicKey?
    ) throws(VerificationError) -> Claims {
        guard let parts = CompactJWS.parse(token) else { throw .malformed }
        struct Header: Decodable {
            var alg: String
            var kid: String
        }
        struct Body: Decodable {
            var iss: String
            var iat: Int64
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: parts.header),
            let body = try? JSONDecoder().decode(Body.self, from: parts.claims)
        else { throw .malformed }
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm }
        guard let key = publicKey(header.kid) else { throw .unknownKey(header.kid) }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parts.signature),
            key.isValidSignature(signature, for: parts.signingInput)
        else { throw .badSignature }
        return Claims(keyID: header.kid, teamID: body.iss, issuedAt: Date(timeIntervalSince1970: TimeInterval(body.iat)))
    }
}
