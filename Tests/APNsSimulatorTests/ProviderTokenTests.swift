import Crypto
import Foundation
import NIOCore
import NIOHPACK
import RetractAPNs
import RetractTestSupport
import Testing

@testable import APNsSimulator

/// The provider tokens the simulator takes and refuses, as pure logic:
/// the same tokens go through `retract simulator` in retractTests'
/// SimulatorFidelityTests.
@Suite("Provider tokens")
struct ProviderTokenTests {
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let issuedAt = Date(timeIntervalSince1970: 1_795_528_474)
    let key = P256.Signing.PrivateKey()

    var keys: [String: APNsSimulatorTokenKey] {
        [Self.keyID: APNsSimulatorTokenKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey)]
    }

    static let accepted: [ClientProviderToken] = [
        .apnswift(keyID: keyID, teamID: teamID, issuedAt: issuedAt),
        .pyjwt(keyID: keyID, teamID: teamID, issuedAt: issuedAt),
        .appleCommandLine(keyID: keyID, teamID: teamID, issuedAt: issuedAt),
        .documented(keyID: keyID, teamID: teamID, issuedAt: issuedAt),
    ]

    @Test(arguments: accepted)
    func tokensAsClientsInTheFieldWriteThemAreAccepted(shape: ClientProviderToken) throws {
        let token = try ProviderTokenCheck.verify(try shape.signed(with: key)[...], keys: keys, acceptsAnyKey: false)
        #expect(token == ProviderToken(keyID: Self.keyID, teamID: Self.teamID, issuedAt: Self.issuedAt))
    }

    @Test func retractsOwnClientTokenIsAccepted() throws {
        let made = try APNsJWT.make(key: APNsSigningKey(key), keyID: Self.keyID, teamID: Self.teamID, issuedAt: Self.issuedAt)
        let token = try ProviderTokenCheck.verify(made[...], keys: keys, acceptsAnyKey: false)
        #expect(token == ProviderToken(keyID: Self.keyID, teamID: Self.teamID, issuedAt: Self.issuedAt))
    }

    /// A token with one thing wrong, and what the simulator says of it.
    struct Refused: Sendable, CustomTestStringConvertible {
        var token: ClientProviderToken
        var signedByAnotherKey = false
        var explanation: String
        var testDescription: String { token.description }
    }

    static let documented = ClientProviderToken.documented(keyID: keyID, teamID: teamID, issuedAt: issuedAt)
    static let refused: [Refused] = [
        Refused(
            token: .documented(keyID: keyID, teamID: teamID, issuedAt: issuedAt, algorithm: "none", signature: .none).with("alg none"),
            explanation: #"alg is "none": APNs accepts only ES256"#),
        Refused(
            token: .documented(keyID: keyID, teamID: teamID, issuedAt: issuedAt, algorithm: "HS256", signature: .hmac).with("alg HS256"),
            explanation: #"alg is "HS256": APNs accepts only ES256"#),
        Refused(
            token: documented.with("alg missing", header: #"{"kid":"\#(keyID)"}"#), explanation: "alg is missing: APNs accepts only ES256"),
        Refused(token: documented.with("signed with another key"), signedByAnotherKey: true,
            explanation: "the signature does not verify with key KEY1234567's public key"),
        Refused(
            token: .documented(keyID: "OTHERKEY99", teamID: teamID, issuedAt: issuedAt).with("unknown key id"),
            explanation: "key id OTHERKEY99 is not known: the simulator knows KEY1234567"),
        Refused(
            token: .documented(keyID: keyID, teamID: "OTHERTEAM9", issuedAt: issuedAt).with("another team"),
            explanation: "key KEY1234567 belongs to team TEAM123456, and the token's iss is OTHERTEAM9"),
        Refused(
            token: documented.with("no kid", header: #"{"alg":"ES256","typ":"JWT"}"#),
            explanation: "the header has no kid (the signing key's id)"),
        Refused(
            token: documented.with("no iss", claims: #"{"iat":1795528474}"#), explanation: "the claims have no iss (the team id)"),
        Refused(
            token: documented.with("iat a word", claims: #"{"iss":"\#(teamID)","iat":"soon"}"#),
            explanation: #"iat is "soon": a whole number of seconds, or a string of digits, is expected"#),
        Refused(
            token: documented.with("iat with a fraction", claims: #"{"iss":"\#(teamID)","iat":1795528474.5}"#),
            explanation: "iat is 1795528474.5: a whole number of seconds, or a string of digits, is expected"),
        Refused(
            token: documented.with("iat a signed string", claims: #"{"iss":"\#(teamID)","iat":"-1795528474"}"#),
            explanation: #"iat is "-1795528474": a whole number of seconds, or a string of digits, is expected"#),
        Refused(
            token: documented.with("iat true", claims: #"{"iss":"\#(teamID)","iat":true}"#),
            explanation: "iat is 1: a whole number of seconds, or a string of digits, is expected"),
        Refused(
            token: documented.with("iat missing", claims: #"{"iss":"\#(teamID)"}"#),
            explanation: "iat is missing: a whole number of seconds, or a string of digits, is expected"),
        Refused(
            token: documented.with("claims not JSON", claims: "iss=TEAM123456"), explanation: "the claims are not a JSON object"),
    ]

    @Test(arguments: refused)
    func whatAPNsRefusesIsRefusedWithAnExplanation(refused: Refused) throws {
        let token = try refused.token.signed(with: refused.signedByAnotherKey ? P256.Signing.PrivateKey() : key)
        #expect(throws: ProviderTokenRefusal(.invalidProviderToken, refused.explanation)) {
            try ProviderTokenCheck.verify(token[...], keys: keys, acceptsAnyKey: false)
        }
    }

    @Test func aTokenThatIsNotThreePartsOrWhoseSignatureIsNotES256IsRefused() throws {
        #expect(throws: ProviderTokenRefusal("not a JWS: three base64url parts separated by dots are expected")) {
            try ProviderTokenCheck.verify("garbage", keys: keys, acceptsAnyKey: true)
        }
        let token = try Self.documented.signed(with: key)
        let cut = token.dropLast(4)
        #expect(throws: ProviderTokenRefusal("the signature is 61 bytes and not DER: an ES256 signature is 64 bytes (r || s) or DER")) {
            try ProviderTokenCheck.verify(cut, keys: keys, acceptsAnyKey: true)
        }
    }

    @Test func anyKeyTakesAnUnknownKeyIdButStillChecksTheShapeAndTheKnownKeys() throws {
        let stranger = P256.Signing.PrivateKey()
        let unknown = try ClientProviderToken.apnswift(keyID: "STRANGER01", teamID: "ANYTEAM123", issuedAt: Self.issuedAt).signed(with: stranger)
        #expect(
            try ProviderTokenCheck.verify(unknown[...], keys: keys, acceptsAnyKey: true)
                == ProviderToken(keyID: "STRANGER01", teamID: "ANYTEAM123", issuedAt: Self.issuedAt))
        #expect(throws: ProviderTokenRefusal("key id STRANGER01 is not known: the simulator knows KEY1234567")) {
            try ProviderTokenCheck.verify(unknown[...], keys: keys, acceptsAnyKey: false)
        }
        #expect(throws: ProviderTokenRefusal("key id STRANGER01 is not known: the simulator was given no --key")) {
            try ProviderTokenCheck.verify(unknown[...], keys: [:], acceptsAnyKey: false)
        }
        let unsigned = try ClientProviderToken.documented(
            keyID: "STRANGER01", teamID: "ANYTEAM123", issuedAt: Self.issuedAt, algorithm: "none", signature: .none
        ).signed(with: stranger)
        #expect(throws: ProviderTokenRefusal(#"alg is "none": APNs accepts only ES256"#)) {
            try ProviderTokenCheck.verify(unsigned[...], keys: keys, acceptsAnyKey: true)
        }
        let forged = try Self.documented.signed(with: stranger)
        #expect(throws: ProviderTokenRefusal("the signature does not verify with key KEY1234567's public key")) {
            try ProviderTokenCheck.verify(forged[...], keys: keys, acceptsAnyKey: true)
        }
    }

    @Test(arguments: [
        (-3600.0, nil), (-3601, APNsReason.expiredProviderToken), (0, nil), (59, nil), (61, .invalidProviderToken),
    ])
    func aTokenLastsAnHourAndMayNotComeFromTheFuture(offset: Double, refusal: APNsReason?) {
        let token = ProviderToken(keyID: Self.keyID, teamID: Self.teamID, issuedAt: Self.issuedAt.addingTimeInterval(offset))
        do {
            try ProviderTokenCheck.checkAge(token, now: Self.issuedAt)
            #expect(refusal == nil)
        } catch {
            #expect(error.reason == refusal)
        }
    }

    /// APNs answers `UnrelatedKeyIdInToken` when a connection's tokens change key.
    @Test func aSecondKeyOnOneConnectionIsUnrelated() throws {
        let other = P256.Signing.PrivateKey()
        let configuration = APNsSimulatorConfiguration(
            tokenKeys: [
                APNsSimulatorTokenKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey),
                APNsSimulatorTokenKey(keyID: "KEY7654321", teamID: Self.teamID, publicKey: other.publicKey),
            ])
        let rules = SimulatorRules(configuration: configuration)
        var authentication = ConnectionAuthentication()
        func push(_ token: String) -> IncomingPush {
            IncomingPush(
                headers: [
                    ":method": "POST", ":path": "/3/device/" + String(repeating: "ab", count: 32), "authorization": "bearer " + token,
                    "apns-topic": "com.example.chat", "apns-push-type": "background", "apns-priority": "5",
                ],
                body: ByteBuffer(string: #"{"aps":{"content-available":1}}"#))
        }
        let now = Self.issuedAt
        let first = try ClientProviderToken.documented(keyID: Self.keyID, teamID: Self.teamID, issuedAt: now).signed(with: key)
        let second = try ClientProviderToken.documented(keyID: "KEY7654321", teamID: Self.teamID, issuedAt: now).signed(with: other)
        guard case .accept = rules.check(push(first), authentication: &authentication, now: now, roll: { _ in 1 }) else {
            Issue.record("the first token was refused")
            return
        }
        guard case .reject(403, .unrelatedKeyIdInToken, _, _, let explanation?) =
            rules.check(push(second), authentication: &authentication, now: now.addingTimeInterval(1800), roll: { _ in 1 })
        else {
            Issue.record("a second key on the connection was not refused as unrelated")
            return
        }
        #expect(explanation == "key KEY7654321 on a connection whose first push used key KEY1234567: open a new connection")
        var fresh = ConnectionAuthentication()
        guard case .accept = rules.check(push(second), authentication: &fresh, now: now, roll: { _ in 1 }) else {
            Issue.record("the second key was refused on a new connection")
            return
        }
    }
}
