import APNsSimulator
import Foundation
import NIOHPACK
import Testing

@Suite("Simulator validation")
struct SimulatorValidationTests {
    let fixture = Fixture()

    /// A request with one thing wrong, and APNs's answer to it.
    struct Rule: Sendable, CustomTestStringConvertible {
        var name: String
        var change: @Sendable (Fixture) throws -> (HPACKHeaders, String)
        var status: Int
        var reason: String?

        var testDescription: String { name }
    }

    static let rules: [Rule] = [
        Rule(name: "accepted", change: { (try $0.headers(), Fixture.body) }, status: 200, reason: nil),
        Rule(
            name: "GET", change: { (try $0.headers().replacing(":method", with: "GET"), Fixture.body) }, status: 405,
            reason: "MethodNotAllowed"),
        Rule(
            name: "wrong path", change: { (try $0.headers(path: "/3/other/\(Fixture.token)"), Fixture.body) }, status: 404,
            reason: "BadPath"),
        Rule(name: "no token", change: { (try $0.headers(path: "/3/device/"), Fixture.body) }, status: 400, reason: "MissingDeviceToken"),
        Rule(
            name: "token not hex", change: { (try $0.headers(path: "/3/device/xyz1"), Fixture.body) }, status: 400, reason: "BadDeviceToken"
        ),
        Rule(
            name: "duplicate header",
            change: {
                var headers = try $0.headers()
                headers.add(name: "apns-topic", value: Fixture.topic)
                return (headers, Fixture.body)
            },
            status: 400, reason: "DuplicateHeaders"
        ),
        Rule(
            name: "no token header", change: { (try $0.headers().replacing("authorization", with: nil), Fixture.body) }, status: 403,
            reason: "MissingProviderToken"),
        Rule(
            name: "garbage token", change: { (try $0.headers(bearer: "garbage"), Fixture.body) }, status: 403,
            reason: "InvalidProviderToken"),
        Rule(
            name: "unknown key id", change: { (try $0.headers(bearer: try $0.jwt(keyID: "OTHERKEY99")), Fixture.body) }, status: 403,
            reason: "InvalidProviderToken"),
        Rule(
            name: "other team", change: { (try $0.headers(bearer: try $0.jwt(teamID: "OTHERTEAM9")), Fixture.body) }, status: 403,
            reason: "InvalidProviderToken"),
        Rule(
            name: "signed with another key",
            change: { (try $0.headers(bearer: try $0.jwt(signedWith: .init())), Fixture.body) },
            status: 403, reason: "InvalidProviderToken"
        ),
        Rule(
            name: "token over an hour old",
            change: { (try $0.headers(bearer: try $0.jwt(issuedAt: Date().addingTimeInterval(-3601))), Fixture.body) },
            status: 403, reason: "ExpiredProviderToken"
        ),
        Rule(
            name: "no topic", change: { (try $0.headers().replacing("apns-topic", with: nil), Fixture.body) }, status: 400,
            reason: "MissingTopic"),
        Rule(
            name: "topic not allowed", change: { (try $0.headers().replacing("apns-topic", with: "com.other"), Fixture.body) }, status: 400,
            reason: "TopicDisallowed"),
        Rule(
            name: "no push type", change: { (try $0.headers().replacing("apns-push-type", with: nil), Fixture.body) }, status: 400,
            reason: "InvalidPushType"),
        Rule(
            name: "unknown push type", change: { (try $0.headers().replacing("apns-push-type", with: "shout"), Fixture.body) }, status: 400,
            reason: "InvalidPushType"),
        Rule(
            name: "background at priority 10", change: { (try $0.headers().replacing("apns-priority", with: "10"), Fixture.body) },
            status: 400, reason: "BadPriority"),
        Rule(
            name: "priority 7", change: { (try $0.headers().replacing("apns-priority", with: "7"), Fixture.body) }, status: 400,
            reason: "BadPriority"),
        Rule(
            name: "expiration not a number", change: { (try $0.headers().replacing("apns-expiration", with: "soon"), Fixture.body) },
            status: 400, reason: "BadExpirationDate"),
        Rule(
            name: "apns-id not a UUID", change: { (try $0.headers().replacing("apns-id", with: "nope"), Fixture.body) }, status: 400,
            reason: "BadMessageId"),
        Rule(
            name: "collapse id of 65 bytes",
            change: { (try $0.headers().replacing("apns-collapse-id", with: String(repeating: "c", count: 65)), Fixture.body) },
            status: 400, reason: "BadCollapseId"
        ),
        Rule(name: "empty body", change: { (try $0.headers(), "") }, status: 400, reason: "PayloadEmpty"),
        Rule(name: "body not JSON", change: { (try $0.headers(), "not json") }, status: 400, reason: "PayloadEmpty"),
        Rule(
            name: "body of 4097 bytes",
            change: { (try $0.headers(), #"{"aps":{},"x":""# + String(repeating: "x", count: 4097 - 17) + #""}"#) },
            status: 413, reason: "PayloadTooLarge"
        ),
        Rule(
            name: "a service-extension carrier",
            change: {
                (
                    try $0.alertHeaders(),
                    #"{"aps":{"alert":{"body":"This message was deleted"},"mutable-content":1},"notificationCustomData":{"pushNotificationReferenceId":"m1","isReferredNotificationMustRemoved":true}}"#
                )
            },
            status: 200, reason: nil
        ),
        Rule(
            name: "an alert at priority 5",
            change: { (try $0.alertHeaders().replacing("apns-priority", with: "5"), #"{"aps":{"alert":"hi"}}"#) }, status: 200,
            reason: nil),
        Rule(
            name: "an alert push with nothing to show", change: { (try $0.alertHeaders(), Fixture.body) }, status: 400,
            reason: "InvalidPushType"),
        Rule(
            name: "mutable-content without an alert",
            change: { (try $0.alertHeaders(), #"{"aps":{"badge":1,"mutable-content":1}}"#) }, status: 400, reason: "InvalidPushType"),
        Rule(
            name: "VoIP body of 5000 bytes",
            change: {
                (
                    try $0.headers().replacing("apns-push-type", with: "voip").replacing("apns-priority", with: "10"),
                    #"{"aps":{},"x":""# + String(repeating: "x", count: 5000 - 17) + #""}"#
                )
            },
            status: 200, reason: nil
        ),
    ]

    @Test(arguments: rules)
    func eachRuleAnswersLikeAPNs(rule: Rule) async throws {
        try await fixture.run { simulator, sender in
            let (headers, body) = try rule.change(fixture)
            let answer = try await sender.send(headers, body: body)
            #expect(answer.status == rule.status, "\(answer.body)")
            #expect(answer.reason == rule.reason)
            #expect(answer.headers.first(name: "apns-id").flatMap(UUID.init(uuidString:)) != nil)
            #expect(simulator.inbox(for: Fixture.token).count == (rule.status == 200 ? 1 : 0))
        }
    }

    /// As written: aioapns sends a lowercase apns-id and matches the answer by its exact text.
    @Test(arguments: [false, true])
    func apnsIDIsEchoedAsWritten(lowercase: Bool) async throws {
        try await fixture.run { simulator, sender in
            let id = UUID()
            let text = lowercase ? id.uuidString.lowercased() : id.uuidString
            let answer = try await sender.send(try fixture.headers().replacing("apns-id", with: text), body: Fixture.body)
            #expect(answer.headers.first(name: "apns-id") == text)
            #expect(simulator.inbox(for: Fixture.token).first?.apnsID == id)
            let refused = try await sender.send(try fixture.headers(bearer: "garbage").replacing("apns-id", with: text), body: Fixture.body)
            #expect(refused.headers.first(name: "apns-id") == text)
        }
    }

    @Test func changingTokensWithinTwentyMinutesIsRefusedPerConnection() async throws {
        let clock = SimulatorClock()
        try await fixture.run(now: { clock.now }) { simulator, sender in
            let first = try fixture.jwt(issuedAt: clock.now)
            let second = try fixture.jwt(issuedAt: clock.now.addingTimeInterval(1))
            #expect(try await sender.send(try fixture.headers(bearer: first), body: Fixture.body).status == 200)
            let refused = try await sender.send(try fixture.headers(bearer: second), body: Fixture.body)
            #expect(refused.status == 429)
            #expect(refused.reason == "TooManyProviderTokenUpdates")
            // The first token is still the connection's and still works.
            #expect(try await sender.send(try fixture.headers(bearer: first), body: Fixture.body).status == 200)
            clock.advance(20 * 60)
            let third = try fixture.jwt(issuedAt: clock.now)
            #expect(try await sender.send(try fixture.headers(bearer: third), body: Fixture.body).status == 200)
            #expect(simulator.statistics.providerTokens == 2)
        }
    }
}

/// The simulator's clock, moved by the test.
final class SimulatorClock: @unchecked Sendable {
    // @unchecked: moved between requests only.
    private(set) var now = Date()
    func advance(_ seconds: TimeInterval) { now += seconds }
}
