import Crypto
import Foundation
import RetractAPNs
import RetractPush

/// What a provider token says, once the simulator has accepted it.
struct ProviderToken: Hashable, Sendable {
    var keyID: String
    var teamID: String
    var issuedAt: Date
}

/// Why a provider token was refused: APNs's reason, and the simulator's own
/// words for the person testing a client (APNs gives none).
struct ProviderTokenRefusal: Error, Hashable, Sendable {
    var reason: APNsReason
    var explanation: String

    init(_ reason: APNsReason, _ explanation: String) {
        self.reason = reason
        self.explanation = explanation
    }

    /// An `InvalidProviderToken`.
    init(_ explanation: String) {
        self.init(.invalidProviderToken, explanation)
    }
}

/// What APNs accepts in a provider token (`authorization: bearer <JWT>`),
/// read from Apple's documentation and from what clients in the field send
/// and APNs takes (docs/simulator.md lists which rule comes from where).
///
/// - Documented: a JWS of three base64url parts; `alg` ES256 (anything else,
///   `none` included, is `InvalidProviderToken`); `kid` in the header naming
///   a key of the team in `iss`; `iat` in seconds; a token older than an hour
///   is `ExpiredProviderToken`.
/// - Observed: extra fields are ignored (`typ` in the header, `kid` among the
///   claims, as APNSwift, PyJWT and jsonwebtoken send); `iat` may be a string
///   of digits (APNSwift); the signature may be DER-encoded (Apple's own
///   command-line recipe, `openssl dgst -sign`, makes one) as well as JOSE's
///   64-byte `r || s`.
/// - The simulator's choice, as APNs documents nothing: a token issued more
///   than ``futureLeeway`` ahead of the simulator's clock is `InvalidProviderToken`.
enum ProviderTokenCheck {
    static let lifetime: TimeInterval = 60 * 60
    static let futureLeeway: TimeInterval = 60

    /// Parses `token` and checks its signature with the key its `kid` names.
    /// With `acceptsAnyKey`, a key id the simulator does not know is taken
    /// without checking the signature, which must still be an ES256 one.
    static func verify(
        _ token: Substring,
        keys: [String: APNsSimulatorTokenKey],
        acceptsAnyKey: Bool
    ) throws(ProviderTokenRefusal) -> ProviderToken {
        guard let parts = CompactJWS.parse(token) else {
            throw ProviderTokenRefusal("not a JWS: three base64url parts separated by dots are expected")
        }
        guard let header = (try? JSONSerialization.jsonObject(with: parts.header)) as? [String: Any] else {
            throw ProviderTokenRefusal("the header is not a JSON object")
        }
        guard let claims = (try? JSONSerialization.jsonObject(with: parts.claims)) as? [String: Any] else {
            throw ProviderTokenRefusal("the claims are not a JSON object")
        }
        guard let algorithm = header["alg"] as? String, algorithm == "ES256" else {
            throw ProviderTokenRefusal("alg is \(describe(header["alg"])): APNs accepts only ES256")
        }
        guard let keyID = header["kid"] as? String, !keyID.isEmpty else {
            throw ProviderTokenRefusal("the header has no kid (the signing key's id)")
        }
        guard let teamID = claims["iss"] as? String, !teamID.isEmpty else {
            throw ProviderTokenRefusal("the claims have no iss (the team id)")
        }
        guard let seconds = issuedAtSeconds(claims: parts.claims), seconds >= 0 else {
            throw ProviderTokenRefusal("iat is \(describe(claims["iat"])): a whole number of seconds, or a string of digits, is expected")
        }
        let candidates = signatures(parts.signature)
        guard !candidates.isEmpty else {
            throw ProviderTokenRefusal(
                "the signature is \(parts.signature.count) bytes and not DER: an ES256 signature is 64 bytes (r || s) or DER")
        }
        if let key = keys[keyID] {
            guard key.teamID == teamID else {
                throw ProviderTokenRefusal("key \(keyID) belongs to team \(key.teamID), and the token's iss is \(teamID)")
            }
            guard candidates.contains(where: { key.publicKey.isValidSignature($0, for: parts.signingInput) }) else {
                throw ProviderTokenRefusal("the signature does not verify with key \(keyID)'s public key")
            }
        } else if !acceptsAnyKey {
            throw ProviderTokenRefusal(
                keys.isEmpty
                    ? "key id \(keyID) is not known: the simulator was given no --key"
                    : "key id \(keyID) is not known: the simulator knows \(keys.keys.sorted().joined(separator: ", "))")
        }
        return ProviderToken(keyID: keyID, teamID: teamID, issuedAt: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Whether a verified token may be used at `now`.
    static func checkAge(_ token: ProviderToken, now: Date) throws(ProviderTokenRefusal) {
        let age = now.timeIntervalSince(token.issuedAt)
        guard age <= lifetime else {
            throw ProviderTokenRefusal(.expiredProviderToken, "iat is more than an hour ago: a token lasts an hour")
        }
        guard age >= -futureLeeway else {
            throw ProviderTokenRefusal("iat is more than \(Int(futureLeeway)) s ahead of the simulator's clock")
        }
    }

    /// `iat` as a JSON integer, or as APNSwift writes it, a string of digits.
    static func issuedAtSeconds(claims: Data) -> Int64? {
        struct Claims: Decodable {
            var iat: Int64?
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                if let seconds = try? container.decode(Int64.self, forKey: .iat) {
                    iat = seconds
                } else if let text = try? container.decode(String.self, forKey: .iat), !text.isEmpty,
                    text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
                {
                    iat = Int64(text)
                }
            }
            enum CodingKeys: CodingKey { case iat }
        }
        return (try? JSONDecoder().decode(Claims.self, from: claims))?.iat
    }

    /// The ES256 signatures `bytes` may be: JOSE's fixed-size `r || s`, or DER
    /// (a DER signature of 64 bytes is rare, but possible).
    static func signatures(_ bytes: Data) -> [P256.Signing.ECDSASignature] {
        [
            bytes.count == 64 ? try? P256.Signing.ECDSASignature(rawRepresentation: bytes) : nil,
            try? P256.Signing.ECDSASignature(derRepresentation: bytes),
        ].compactMap { $0 }
    }

    private static func describe(_ value: Any?) -> String {
        switch value {
        case nil: "missing"
        case let text as String: "\"\(text)\""
        case let value?: "\(value)"
        }
    }
}
