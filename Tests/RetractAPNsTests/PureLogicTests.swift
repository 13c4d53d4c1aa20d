import Crypto
import Foundation
import NIOCore
import RetractAPNs
import RetractKit
import RetractPush
import Testing

@Suite("APNs pure logic")
struct PureLogicTests {
    @Test func everyReasonRoundTripsThroughItsString() {
        for reason in APNsReason.allKnown {
            #expect(APNsReason(rawValue: reason.rawValue) == reason)
            #expect(reason.status != nil)
        }
        #expect(APNsReason.allKnown.count == 32)
        #expect(APNsReason(rawValue: "SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason(rawValue: "SomethingNew").status == nil)
    }

    static let classifications: [(error: APNsError, expected: PushVerdict)] = [
        (
            .rejected(.init(status: 410, reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000))),
            .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000), reason: "Unregistered")
        ),
        (.rejected(.init(status: 410, reason: .expiredToken)), .tokenDead(since: nil, reason: "ExpiredToken")),
        // About the app's environment or topic far more often than about the device: failures, not dead tokens.
        (.rejected(.init(status: 400, reason: .badDeviceToken)), .failed(reason: "BadDeviceToken")),
        (.rejected(.init(status: 400, reason: .deviceTokenNotForTopic)), .failed(reason: "DeviceTokenNotForTopic")),
        // APNsClient has made a new provider token once already: refused again, the clock or the key is wrong.
        (
            .rejected(.init(status: 403, reason: .expiredProviderToken)),
            .credentialsRefused(reason: "ExpiredProviderToken even with a new provider token")
        ),
        (.rejected(.init(status: 403, reason: .invalidProviderToken)), .credentialsRefused(reason: "InvalidProviderToken")),
        (.rejected(.init(status: 403, reason: .badCertificateEnvironment)), .credentialsRefused(reason: "BadCertificateEnvironment")),
        (.authenticationUnavailable("the key is unreadable"), .credentialsRefused(reason: "the key is unreadable")),
        (.rejected(.init(status: 400, reason: .badTopic)), .failed(reason: "BadTopic")),
        (.rejected(.init(status: 404, reason: .badPath)), .failed(reason: "BadPath")),
        (.rejected(.init(status: 413, reason: .payloadTooLarge)), .failed(reason: "PayloadTooLarge")),
        (.rejected(.init(status: 418, reason: .unknown("Teapot"))), .failed(reason: "Teapot")),
        (
            .invalidRequest(.init(field: .topic, reason: "is missing")),
            .failed(reason: "\(APNsError.invalidRequest(.init(field: .topic, reason: "is missing")))")
        ),
        (.clientShutdown, .failed(reason: "the APNs client was shut down")),
        // Never reached APNs: the device waits for it, using up no attempt.
        (.connectFailed("refused"), .unreachable(reason: "cannot connect to APNs: refused")),
    ]

    @Test(arguments: classifications.indices)
    func classificationOfOutcomes(index: Int) {
        let (error, expected) = Self.classifications[index]
        #expect(PushVerdict(error) == expected)
    }

    static let retryable: [APNsError] = [
        .rejected(.init(status: 429, reason: .tooManyRequests)),
        .rejected(.init(status: 429, reason: .tooManyProviderTokenUpdates)),
        .rejected(.init(status: 500, reason: .internalServerError)),
        .rejected(.init(status: 503, reason: .serviceUnavailable)),
        .rejected(.init(status: 503, reason: .shutdown)),
        .rejected(.init(status: 502, reason: .unknown("BadGateway"))),
        .timedOut, .connectionLost,
    ]

    /// When and how often to try again is the engine's one retry policy;
    /// APNs asks for no particular wait.
    @Test(arguments: retryable)
    func retryableErrorsAreRetryableWithoutAWait(error: APNsError) {
        guard case .retryable(_, let retryAfter) = PushVerdict(error) else {
            Issue.record("\(error) is not retryable")
            return
        }
        #expect(retryAfter == nil)
    }

    @Test func jwtIsCompactBase64URLWithTheDocumentedFields() throws {
        let key = P256.Signing.PrivateKey()
        let issuedAt = Date(timeIntervalSince1970: 1_700_000_000)
        let token = try APNsJWT.make(key: APNsSigningKey(key), keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: issuedAt)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
        #expect(Data(base64URLEncoded: parts[0]).map { String(decoding: $0, as: UTF8.self) } == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(Data(base64URLEncoded: parts[1]).map { String(decoding: $0, as: UTF8.self) } == #"{"iss":"DEF123GHIJ","iat":1700000000}"#)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Data(base64URLEncoded: parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data(token[..<parts[1].endIndex].utf8)))
    }

    @Test func signingKeyReadsAP8FileAndRefusesOtherText() throws {
        let key = P256.Signing.PrivateKey()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8")
        defer { try? FileManager.default.removeItem(at: file) }
        try key.pemRepresentation.write(to: file, atomically: true, encoding: .utf8)
        let loaded = try APNsSigningKey(contentsOfFile: file.path)
        #expect(loaded.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect("\(loaded)" == "APNsSigningKey(P-256)")
        #expect(throws: APNsError.authenticationUnavailable("cannot read the signing key file /nonexistent.p8")) {
            try APNsSigningKey(contentsOfFile: "/nonexistent.p8")
        }
        #expect(throws: APNsError.authenticationUnavailable("the signing key is not a P-256 private key in PEM form")) {
            try APNsSigningKey(pem: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----")
        }
    }
}
