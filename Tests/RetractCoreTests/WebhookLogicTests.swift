import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import RetractCore
import RetractModel
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

/// Where a webhook may go, and what a failed attempt is called, without sockets.
@Suite("Webhook destinations")
struct WebhookDestinationTests {
    @Test func addressesInTheMachinesOwnRangesAreRestricted() throws {
        let restricted = [
            ("127.0.0.1", "loopback"), ("10.1.2.3", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"), ("100.64.0.1", "shared address space"), ("0.0.0.0", "unspecified"),
            ("::1", "loopback"), ("fe80::1", "link-local"), ("fd00::1", "unique-local"), ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "link-local"), ("64:ff9b::7f00:1", "loopback"), ("::", "unspecified"), ("[::1]", "loopback"),
            ("::10.0.0.1", "private"), ("2002:a9fe:a9fe::1", "link-local"), ("2001:db8::1", "reserved"),
            ("2001:0:4136:e378::1", "reserved"),
            ("198.51.100.7", "reserved"),
        ]
        for (text, range) in restricted { #expect(IPAddress(text)?.restrictedRange == range, "\(text)") }
        for text in ["93.184.216.34", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "2002:5db8:d822::1"] {
            #expect(IPAddress(text) != nil && IPAddress(text)?.restrictedRange == nil, "\(text)")
        }
        for text in ["example.com", "10.0.0", "1.2.3.4.5", ""] { #expect(IPAddress(text) == nil, "\(text)") }
        #expect(IPAddress("::ffff:10.0.0.1")?.description == "::ffff:10.0.0.1")

        let ten = try #require(IPNetwork("10.0.0.0/8"))
        #expect(ten.contains(IPAddress("10.255.0.1")!) && !ten.contains(IPAddress("11.0.0.1")!))
        #expect(ten.contains(IPAddress("::ffff:10.1.1.1")!))
        #expect(IPNetwork("fd00::/8")?.contains(IPAddress("fd12::1")!) == true)
        #expect(IPNetwork("192.0.2.7")?.contains(IPAddress("192.0.2.8")!) == false)
        for bad in ["10.0.0.0/33", "10.0.0.0/x", "fd00::/129", "host/8", "10.0.0.0/+8"] { #expect(IPNetwork(bad) == nil, "\(bad)") }
    }

    @Test func theListNamesHostAndPortAndAResolvedAddressMustBePublicUnlessAllowed() throws {
        let destinations = WebhookDestinations(allowedHosts: ["hooks.example.com", "hooks.example.com:8443", "10.0.0.7:9000"])
        #expect(destinations.refusal(of: "https://hooks.example.com/x") == nil)
        #expect(destinations.refusal(of: "https://HOOKS.example.com:8443/x") == nil)
        // An entry without a port is 443 only.
        #expect(destinations.refusal(of: "https://hooks.example.com:444/x") == .hostNotAllowed("hooks.example.com:444"))
        #expect(destinations.refusal(of: "https://169.254.169.254/latest") == .hostNotAllowed("169.254.169.254"))
        #expect(destinations.refusal(of: "http://hooks.example.com/x") == .hostNotAllowed("(not an https:// URL)"))
        // An address the operator put on the list is allowed although it is private.
        #expect(destinations.refusal(of: "https://10.0.0.7:9000/x") == nil)

        // A name is judged by every address it resolves to.
        let target = try #require(WebhookDestinations.target(of: "https://hooks.example.com/x"))
        #expect(
            destinations.refusal(of: IPAddress("169.254.169.254")!, for: target)
                == .addressNotAllowed(host: "hooks.example.com", address: "169.254.169.254", range: "link-local"))
        #expect(destinations.refusal(of: IPAddress("93.184.216.34")!, for: target) == nil)
        var operatorAllowed = destinations
        operatorAllowed.allowedNetworks = [IPNetwork("10.0.0.0/8")!]
        #expect(operatorAllowed.refusal(of: IPAddress("10.1.1.1")!, for: target) == nil)
        #expect(operatorAllowed.refusal(of: IPAddress("127.0.0.1")!, for: target) != nil)
        #expect(!WebhookFailure.addressNotAllowed(host: "a", address: "127.0.0.1", range: "loopback").isRetried)
        #expect(WebhookFailure.connectionRefused.isRetried)
    }

    @Test func failuresAreStoredAsAFewWordsNeverTheRawError() {
        let cases: [(any Error, WebhookFailure)] = [
            (IOError(errnoCode: ECONNREFUSED, reason: "connect"), .connectionRefused),
            (IOError(errnoCode: ECONNRESET, reason: "read(descriptor:pointer:size:)"), .connectionReset),
            (HTTPClientError.connectTimeout, .timedOut),
            (HTTPClientError.deadlineExceeded, .timedOut),
            (NIOSSLError.handshakeFailed(.sslError([])), .tlsHandshakeFailed),
            (NIOSSLExtraError.failedToValidateHostname, .tlsHandshakeFailed),
            (HTTPClientError.remoteConnectionClosed, .connectionReset),
            (IOError(errnoCode: EHOSTUNREACH, reason: "connect"), .unreachable),
            (NIOSSLError.uncleanShutdown, .connectionFailed),
            (HTTPClientError.invalidURL, .connectionFailed),
        ]
        for (error, expected) in cases { #expect(WebhookFailure.classify(error) == expected, "\(String(reflecting: error))") }
        for failure in cases.map(\.1) { #expect(!failure.description.contains("errno") && !failure.description.contains("descriptor")) }
        // The query, the user part and the path can each hold a receiver's secret.
        #expect(WebhookURL.redacted("https://user:pw@hooks.example.com:8443/r?token=s3cret#x") == "https://hooks.example.com:8443/…")
        #expect(WebhookURL.redacted("https://hooks.slack.com/services/T0/B0/XXXX") == "https://hooks.slack.com/…")
        #expect(WebhookURL.redacted("https://hooks.example.com") == "https://hooks.example.com")
        #expect(WebhookURL.redacted("https://[::1]:8443/x") == "https://[::1]:8443/…")
        #expect(WebhookURL.redacted("not a url") == "(not a URL)")
    }
}
