import Foundation
import Testing

@testable import RetractAPNs

@Suite("Provider token schedule")
struct TokenScheduleTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func aTokenIsKeptFiftyMinutes() {
        var schedule = TokenSchedule()
        #expect(schedule.needsToken(at: start))
        _ = schedule.issued(at: start)
        #expect(!schedule.needsToken(at: start.addingTimeInterval(49 * 60)))
        #expect(schedule.needsToken(at: start.addingTimeInterval(50 * 60)))
    }

    @Test func expiryRefreshesOnceThenWaitsTwentyMinutes() {
        var schedule = TokenSchedule()
        let first = schedule.issued(at: start)
        let soon = start.addingTimeInterval(60)
        #expect(schedule.expiryReported(generation: first, at: soon) == .refresh)
        let second = schedule.issued(at: soon, early: true)
        // Requests signed with the first token answered late: use the new one.
        #expect(schedule.expiryReported(generation: first, at: soon) == .useCurrent)
        // The early token expires too, within 20 minutes: refuse.
        #expect(schedule.expiryReported(generation: second, at: soon.addingTimeInterval(19 * 60)) == .refuse)
        #expect(schedule.expiryReported(generation: second, at: soon.addingTimeInterval(20 * 60)) == .refresh)
    }

    @Test func providerMakesOneTokenForManyRequestsAndANewOneAfterFiftyMinutes() throws {
        let clock = MovingClock(start)
        let provider = APNsTokenProvider(
            key: APNsSigningKey(.init()),
            keyID: "KEY1234567",
            teamID: "TEAM123456",
            now: { clock.now }
        )
        let first = try provider.current()
        for _ in 0..<1000 { #expect(try provider.current().bearer == first.bearer) }
        clock.advance(50 * 60)
        let second = try provider.current()
        #expect(second.generation == 2 && second.bearer != first.bearer)
        #expect(provider.tokensMade == 2)
        #expect(try provider.expired(first)?.bearer == second.bearer)
        #expect(provider.tokensMade == 2)
    }
}

/// A clock a test moves by hand.
final class MovingClock: @unchecked Sendable {
    // @unchecked: tests move it between sends, never during one.
    private(set) var now: Date
    init(_ start: Date) { now = start }
    func advance(_ seconds: TimeInterval) { now += seconds }
    func set(_ date: Date) { now = date }
}

/// A clock that is skewed for its first reading and right from then on: a
/// skew corrected while the first send is under way, without a race on when.
final class CorrectedClock: Sendable {
    private let skew: TimeInterval
    private let readings = NSLock.Protected(0)

    init(skew: TimeInterval) { self.skew = skew }

    var now: Date {
        let reading = readings.withValue { count in
            count += 1
            return count
        }
        return Date().addingTimeInterval(reading == 1 ? skew : 0)
    }
}

extension NSLock {
    /// A value only touched under a lock of its own.
    final class Protected<Value>: @unchecked Sendable {
        // @unchecked: `value` is read and written only inside `lock`.
        private let lock = NSLock()
        private var value: Value

        init(_ value: Value) { self.value = value }

        func withValue<Result>(_ body: (inout Value) -> Result) -> Result {
            lock.lock()
            defer { lock.unlock() }
            return body(&value)
        }
    }
}
