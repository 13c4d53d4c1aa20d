import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractPush
import RetractStore
import Testing

/// The engine's bookkeeping, without sockets or a database.
@Suite("Engine pure logic")
struct CorePureLogicTests {
    struct Fixed: RandomNumberGenerator {
        var value: UInt64
        mutating func next() -> UInt64 { value }
    }

    // MARK: - The one retry decision

    @Test func backoffGrowsWithFullJitterUpToTheCap() {
        let policy = RetryPolicy(baseDelay: .milliseconds(250), maximumDelay: .seconds(10))
        var highest = Fixed(value: .max)
        #expect(policy.delay(afterAttempt: 1, using: &highest) == .milliseconds(250))
        #expect(policy.delay(afterAttempt: 3, using: &highest) == .seconds(1))
        #expect(policy.delay(afterAttempt: 7, using: &highest) == .seconds(10))
        #expect(policy.delay(afterAttempt: 90, using: &highest) == .seconds(10))
        var lowest = Fixed(value: 0)
        #expect(policy.delay(afterAttempt: 5, using: &lowest) == .zero)
    }

    /// Each service's verdict comes to the same outcome, whichever client gave it.
    @Test func verdictsBecomeOutcomes() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maximumDelay: .seconds(1))
        var highest = Fixed(value: .max)
        let since = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(policy.outcome(of: .delivered, attempt: 1, using: &highest) == .accepted)
        #expect(
            policy.outcome(of: .tokenDead(since: since, reason: "Unregistered"), attempt: 1, using: &highest)
                == .tokenDead(since: since, reason: "Unregistered"))
        #expect(policy.outcome(of: .failed(reason: "BadTopic"), attempt: 1, using: &highest) == .failed(reason: "BadTopic"))
        #expect(
            policy.outcome(of: .credentialsRefused(reason: "Forbidden"), attempt: 1, using: &highest)
                == .authenticationFailed(reason: "Forbidden"))
        #expect(policy.outcome(of: .unreachable(reason: "refused"), attempt: 1, using: &highest) == .unreachable(reason: "refused"))
        // The backoff of the attempt, or the service's Retry-After when longer.
        #expect(
            policy.outcome(of: .retryable(reason: "503", retryAfter: nil), attempt: 2, using: &highest)
                == .retry(after: .milliseconds(200), reason: "503"))
        #expect(
            policy.outcome(of: .retryable(reason: "429", retryAfter: 7), attempt: 2, using: &highest)
                == .retry(after: .seconds(7), reason: "429"))
        #expect(
            policy.outcome(of: .retryable(reason: "429", retryAfter: 0.05), attempt: 2, using: &highest)
                == .retry(after: .milliseconds(200), reason: "429"))
    }

    @Test func aDeadTokenWithoutTheServicesTimeIsDeadFromNow() {
        var generator = Fixed(value: 0)
        let before = Date()
        guard
            case .tokenDead(let since, _) = RetryPolicy().outcome(
                of: .tokenDead(since: nil, reason: "UNREGISTERED"), attempt: 1, using: &generator)
        else {
            Issue.record("not dead")
            return
        }
        #expect(since >= before && since <= Date())
    }

    // MARK: - Tally

    static let device = DeviceReferences(token: DeviceToken(bytes: [1, 2, 3]), references: ["r"])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aTallyCountsFirstAnswers() {
        var tally = Tally(budget: .seconds(60))
        tally.add(.accepted, for: Self.device, attempt: 1, isRetry: false, failingSince: nil, now: Self.now)
        tally.add(
            .tokenDead(since: Self.now, reason: "Unregistered"), for: Self.device, attempt: 1, isRetry: false, failingSince: nil,
            now: Self.now)
        tally.add(.failed(reason: "BadDeviceToken"), for: Self.device, attempt: 1, isRetry: false, failingSince: nil, now: Self.now)
        tally.add(.retry(after: .seconds(1), reason: "503"), for: Self.device, attempt: 1, isRetry: false, failingSince: nil, now: Self.now)
        // Neither is counted: the item waits for its service, or the retraction stops.
        tally.add(.unreachable(reason: "refused"), for: Self.device, attempt: 1, isRetry: false, failingSince: nil, now: Self.now)
        tally.add(
            .authenticationFailed(reason: "Forbidden"), for: Self.device, attempt: 1, isRetry: false, failingSince: nil, now: Self.now)
        #expect((tally.counts.sent, tally.counts.dead, tally.counts.failed, tally.counts.retrying) == (1, 1, 1, 1))
        #expect(tally.dead.map(\.learnedAt) == [Self.now])
        #expect(tally.failures == ["BadDeviceToken": 1])
        #expect(tally.retries.count == 1)
        #expect(tally.retries.first?.failingSince == Self.now)
    }

    @Test func aRetriedDeviceLeavesRetryingWhenSettledAndFailsPastItsBudget() {
        var tally = Tally(budget: .seconds(60))
        let first = Self.now.addingTimeInterval(-30)
        tally.add(
            .retry(after: .seconds(1), reason: "503"), for: Self.device, attempt: 2, isRetry: true, failingSince: first, now: Self.now)
        #expect(tally.counts.retrying == 0)
        #expect(tally.retries.first?.failingSince == first)
        tally.add(.accepted, for: Self.device, attempt: 3, isRetry: true, failingSince: first, now: Self.now)
        #expect((tally.counts.sent, tally.counts.retrying) == (1, -1))
        let long = Self.now.addingTimeInterval(-61)
        tally.add(.retry(after: .seconds(1), reason: "503"), for: Self.device, attempt: 9, isRetry: true, failingSince: long, now: Self.now)
        #expect((tally.counts.failed, tally.counts.retrying) == (1, -2))
        #expect(tally.failures == ["no success within the 1 min retry budget: 503": 1])
        #expect(tally.retries.count == 1)
    }

    // MARK: - Bodies

    @Test func bodiesAreBuiltOncePerReferenceListAndLimit() throws {
        var cache = BodyCache(builder: PayloadBuilder())
        let first = try cache.bodies(for: ["a", "b"], limit: PayloadBuilder.maximumBodySize)
        let again = try cache.bodies(for: ["a", "b"], limit: PayloadBuilder.maximumBodySize)
        #expect(first == again && cache.count == 1)
        _ = try cache.bodies(for: ["a", "b"], limit: 1000)
        #expect(cache.count == 2)
        // Many references under a small limit take several bodies, each within it.
        let references = (0..<200).map { ReferenceID("message-\($0)") }
        let packed = try cache.bodies(for: references, limit: 1000)
        #expect(packed.count > 1)
        #expect(packed.allSatisfy { $0.readableBytes <= 1000 })
    }

    // MARK: - Errors name their field

    @Test func anErrorOfOneOfAListNamesItsPlaceInTheList() {
        let error = RetractError(.invalidInput, "sentAt: more than a day in the future", field: "sentAt").within("[2].")
        #expect(error.field == "[2].sentAt")
        #expect(error.message == "[2].sentAt: more than a day in the future")
        let credentials = RetractError(.credentials, "app chat has no FCM service account", field: "transport").within("[0].")
        #expect(credentials.field == "[0].transport")
        #expect(credentials.message == "app chat has no FCM service account")
        #expect(RetractError(.invalidInput, "no field").within("[1].").field == nil)
    }

    @Test func aReferenceFromOutsideIsCheckedOnce() throws {
        #expect(try ReferenceID(validating: "msg-8812") == "msg-8812")
        #expect(throws: FieldProblem("references[3]", "0 bytes; a reference has 1 to 256")) {
            try ReferenceID(validating: "", field: "references[3]")
        }
        #expect(throws: FieldProblem("reference", "257 bytes; a reference has 1 to 256")) {
            try ReferenceID(validating: String(repeating: "x", count: 257))
        }
        #expect(throws: FieldProblem("reference", "a reference cannot hold control characters (U+000A)")) {
            try ReferenceID(validating: "a\nb")
        }
    }

    @Test func aRegistrationProblemNamesItsField() {
        func registration(_ change: (inout AppRegistration) -> Void) -> AppRegistration {
            var registration = AppRegistration(
                name: "chat", topic: "com.example.chat", environment: .sandbox,
                authentication: .token(keyID: "ABCDEFGHIJ", teamID: "KLMNOPQRST", keyPath: "/keys/AuthKey.p8"))
            change(&registration)
            return registration
        }
        #expect(registration { _ in }.problem == nil)
        #expect(registration { $0.name = "Chat!" }.problem?.field == "name")
        #expect(registration { $0.topic = "" }.problem?.field == "topic")
        #expect(registration { $0.endpoint = "http://x" }.problem?.field == "endpoint")
        #expect(registration { $0.authentication = .token(keyID: "short", teamID: "KLMNOPQRST", keyPath: "/k") }.problem?.field == "keyID")
        #expect(registration { $0.authentication = .token(keyID: "ABCDEFGHIJ", teamID: "x", keyPath: "/k") }.problem?.field == "teamID")
        #expect(
            registration { $0.authentication = .token(keyID: "ABCDEFGHIJ", teamID: "KLMNOPQRST", keyPath: "") }.problem?.field == "keyPath")
        #expect(registration { $0.authentication = .certificate(path: "") }.problem?.field == "certificatePath")
        #expect(registration { $0.fcmServiceAccountPath = "" }.problem?.field == "fcmServiceAccountPath")
        #expect(registration { $0.authentication = .fcmOnly }.problem?.field == "credentials")
    }
}
