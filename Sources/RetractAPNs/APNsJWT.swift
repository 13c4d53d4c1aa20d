import Crypto
import Foundation
import RetractKit

/// The provider authentication token APNs expects: an ES256 JWT with the key
/// id in its header and the team id and issue time in its claims.
public enum APNsJWT {
    /// A signed token, ready for `authorization: bearer <token>`.
    public static func make(key: APNsSigningKey, keyID: String, teamID: String, issuedAt: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":\#(JSONText.quoted(keyID))}"#
        let claims = #"{"iss":\#(JSONText.quoted(teamID)),"iat":\#(Int64(issuedAt.timeIntervalSince1970))}"#
        let signingInput = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        let signature = try key.privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + base64URL(signature.rawRepresentation)
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
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = data(base64URL: parts[0]), let claimsData = data(base64URL: parts[1]),
            let signatureData = data(base64URL: parts[2])
        else { throw .malformed }
        struct Header: Decodable {
            var alg: String
            var kid: String
        }
        struct Body: Decodable {
            var iss: String
            var iat: Int64
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let body = try? JSONDecoder().decode(Body.self, from: claimsData)
        else { throw .malformed }
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm }
        guard let key = publicKey(header.kid) else { throw .unknownKey(header.kid) }
        let signingInput = Data(token[..<parts[1].endIndex].utf8)
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: signingInput)
        else { throw .badSignature }
        return Claims(keyID: header.kid, teamID: body.iss, issuedAt: Date(timeIntervalSince1970: TimeInterval(body.iat)))
    }

    package static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func data(base64URL text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
