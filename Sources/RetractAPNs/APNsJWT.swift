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
}
