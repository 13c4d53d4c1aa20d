import Crypto
import Foundation
import NIOCore
import RetractAPNs
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

    static let classifications: [(outcome: Result<APNsResponse, APNsError>, expected: APNsDisposition)] = [
        (.success(APNsResponse(apnsID: nil)), .delivered),
        (
            .failure(.rejected(.init(status: 410, reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_700_000_000)))),
            .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000))
        ),
        (.failure(.rejected(.init(status: 410, reason: .expiredToken))), .tokenDead(since: nil)),
        // About the app's environment or topic far more often than about the device: failures, not dead tokens.
        (
            .failure(.rejected(.init(status: 400, reason: .badDeviceToken))),
            .permanentFailure(.rejected(.init(status: 400, reason: .badDeviceToken)))
        ),
        (
            .failure(.rejected(.init(status: 400, reason: .deviceTokenNotForTopic))),
            .permanentFailure(.rejected(.init(status: 400, reason: .deviceTokenNotForTopic)))
        ),
        (.failure(.rejected(.init(status: 403, reason: .expiredProviderToken))), .refreshAuthenticationAndRetry),
        (.failure(.rejected(.init(status: 403, reason: .invalidProviderToken))), .authenticationFailed(.invalidProviderToken)),
        (.failure(.rejected(.init(status: 403, reason: .badCertificateEnvironment))), .authenticationFailed(.badCertificateEnvironment)),
        (.failure(.rejected(.init(status: 400, reason: .badTopic))), .permanentFailure(.rejected(.init(status: 400, reason: .badTopic)))),
        (.failure(.rejected(.init(status: 404, reason: .badPath))), .permanentFailure(.rejected(.init(status: 404, reason: .badPath)))),
        (
            .failure(.rejected(.init(status: 413, reason: .payloadTooLarge))),
            .permanentFailure(.rejected(.init(status: 413, reason: .payloadTooLarge)))
        ),
        (
            .failure(.rejected(.init(status: 418, reason: .unknown("Teapot")))),
            .permanentFailure(.rejected(.init(status: 418, reason: .unknown("Teapot"))))
        ),
        (
            .failure(.invalidRequest(.init(field: .topic, reason: "is missing"))),
            .permanentFailure(.invalidRequest(.init(field: .topic, reason: "is missing")))
        ),
        (.failure(.clientShutdown), .permanentFailure(.clientShutdown)),
    ]

    @Test(arguments: classifications.indices)
    func classificationOfOutcomes(index: Int) {
        var generator = SystemRandomNumberGenerator()
        let (outcome, expected) = Self.classifications[index]
        #expect(APNsDisposition(classifying: outcome, attempt: 1, policy: RetryPolicy(), using: &generator) == expected)
    }

    static let retryable: [APNsError] = [
        .rejected(.init(status: 429, reason: .tooManyRequests)),
        .rejected(.init(status: 429, reason: .tooManyProviderTokenUpdates)),
        .rejected(.init(status: 500, reason: .internalServerError)),
        .rejected(.init(status: 503, reason: .serviceUnavailable)),
        .rejected(.init(status: 503, reason: .shutdown)),
        .rejected(.init(status: 502, reason: .unknown("BadGateway"))),
        .timedOut, .connectionLost, .connectFailed("refused"),
    ]

    /// How long to go on is the sender's retry budget, in time: the
    /// classification retries at any attempt, with a backoff that grows.
    @Test(arguments: retryable)
    func retryableErrorsRetryWithAGrowingBackoff(error: APNsError) {
        var generator = SystemRandomNumberGenerator()
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maximumDelay: .seconds(1))
        for attempt in [1, 2, 3, 50] {
            guard
                case .retry(let delay) = APNsDisposition(classifying: .failure(error), attempt: attempt, policy: policy, using: &generator)
            else {
                Issue.record("attempt \(attempt) of \(error) is not retried")
                continue
            }
            #expect(delay >= .zero && delay <= min(.milliseconds(100 << min(attempt - 1, 20)), .seconds(1)))
        }
    }

    @Test func backoffGrowsWithFullJitterUpToTheCap() {
        struct Fixed: RandomNumberGenerator {
            var value: UInt64
            mutating func next() -> UInt64 { value }
        }
        let policy = RetryPolicy(baseDelay: .milliseconds(250), maximumDelay: .seconds(10))
        var highest = Fixed(value: .max)
        #expect(policy.delay(afterAttempt: 1, using: &highest) == .milliseconds(250))
        #expect(policy.delay(afterAttempt: 3, using: &highest) == .seconds(1))
        #expect(policy.delay(afterAttempt: 7, using: &highest) == .seconds(10))
        #expect(policy.delay(afterAttempt: 90, using: &highest) == .seconds(10))
        var lowest = Fixed(value: 0)
        #expect(policy.delay(afterAttempt: 5, using: &lowest) == .zero)
    }

    @Test func jwtIsSignedAndVerifies() throws {
        let key = P256.Signing.PrivateKey()
        let issuedAt = Date(timeIntervalSince1970: 1_700_000_000)
        let token = try APNsJWT.make(key: APNsSigningKey(key), keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: issuedAt)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
        let claims = try APNsJWT.verify(token[...]) { $0 == "ABC123DEFG" ? key.publicKey : nil }
        #expect(claims == APNsJWT.Claims(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: issuedAt))

        #expect(throws: APNsJWT.VerificationError.unknownKey("ABC123DEFG")) { try APNsJWT.verify(token[...]) { _ in nil } }
        #expect(throws: APNsJWT.VerificationError.badSignature) {
            try APNsJWT.verify(token[...]) { _ in P256.Signing.PrivateKey().publicKey }
        }
        #expect(throws: APNsJWT.VerificationError.malformed) { try APNsJWT.verify("not.a.token") { _ in key.publicKey } }
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
