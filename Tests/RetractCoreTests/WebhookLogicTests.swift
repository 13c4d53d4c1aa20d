import Foundation
import RetractCore
import RetractStore
import Testing

/// The webhook's signature and retry schedule, without sockets or a database.
@Suite("Webhook pure logic")
struct WebhookLogicTests {
    typealias Fixed = CorePureLogicTests.Fixed

    @Test func theSignatureIsTheHMACOfTheTimestampAndBodyAsPythonComputesIt() {
        // python3: hmac.new(b'whsec_test', b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
        let signature = WebhookSignature(body: Array(#"{"a":1}"#.utf8), secret: "whsec_test", timestamp: 1_700_000_000)
        #expect(signature.header == "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789")
        #expect(WebhookSignature(header: signature.header) == signature)
    }

    @Test func aSignatureVerifiesOnlyWithItsSecretBodyAndWithinTheTolerance() {
        let body = Array(#"{"event":"retraction.finished"}"#.utf8)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let signature = WebhookSignature(body: body, secret: "s3cret", timestamp: 1_800_000_000)
        #expect(signature.verifies(body: body, secret: "s3cret", now: now))
        #expect(signature.verifies(body: body, secret: "s3cret", now: now.addingTimeInterval(299)))
        #expect(!signature.verifies(body: body, secret: "s3cret", now: now.addingTimeInterval(301)))
        #expect(!signature.verifies(body: body, secret: "other", now: now))
        #expect(!signature.verifies(body: body + [0x20], secret: "s3cret", now: now))
        #expect(WebhookSignature(header: "v1=abc") == nil)
    }

    @Test func retriesBackOffWithinTheWindowAndStopAtItsEnd() {
        let settings = WebhookSettings()
        let first = Date(timeIntervalSince1970: 1_800_000_000)
        var highest = Fixed(value: .max)
        #expect(settings.retryDelay(afterAttempt: 1, firstAttempt: first, now: first, using: &highest) == .seconds(10))
        #expect(settings.retryDelay(afterAttempt: 3, firstAttempt: first, now: first, using: &highest) == .seconds(40))
        #expect(settings.retryDelay(afterAttempt: 20, firstAttempt: first, now: first, using: &highest) == .seconds(3600))
        // The last attempt is at the window's end, and none after it.
        let late = first.addingTimeInterval(24 * 3600 - 60)
        #expect(settings.retryDelay(afterAttempt: 20, firstAttempt: first, now: late, using: &highest) == .seconds(60))
        #expect(
            settings.retryDelay(afterAttempt: 21, firstAttempt: first, now: first.addingTimeInterval(24 * 3600), using: &highest) == nil)
    }

    @Test func aDeliveryStateFollowsItsAttempts() {
        var delivery = WebhookDelivery(
            id: UUID(), retractionID: UUID(), appID: 1, url: "https://hooks.example.com/r", attempts: 0, lastStatus: nil, lastError: nil,
            createdAt: Date(), firstAttemptAt: nil, deliveredAt: nil, gaveUpAt: nil, nextAttemptAt: Date())
        #expect(delivery.state == .pending)
        delivery.attempts = 1
        delivery.lastStatus = 500
        #expect(delivery.state == .retrying)
        delivery.gaveUpAt = Date()
        #expect(delivery.state == .gaveUp)
        #expect(delivery.state.rawValue == "gave-up")
        delivery.gaveUpAt = nil
        delivery.deliveredAt = Date()
        #expect(delivery.state == .delivered)
    }
}
