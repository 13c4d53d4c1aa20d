import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

/// What a work item's sending means for the ledger, and when an item is
/// given up or given back: the worker's rules, without a database, a socket
/// or a clock of their own.
@Suite("Settlement and item rules")
struct SettlementTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let budget = Duration.seconds(3600)

    static func item(
        _ kind: ClaimedWorkItem.Kind = .page(after: nil, through: nil), attempts: Int = 1, claims: Int = 1, lastError: String? = nil,
        firstFailedAt: Date? = nil, waitingSince: Date? = nil
    ) -> ClaimedWorkItem {
        ClaimedWorkItem(
            id: 7, retractionID: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), kind: kind, attempts: attempts,
            claim: UUID(uuid: (9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9)), leaseEnds: now.addingTimeInterval(60), claims: claims,
            lastError: lastError, firstFailedAt: firstFailedAt, waitingSince: waitingSince)
    }

    static func device(_ token: Int) -> DeviceReferences {
        DeviceReferences(token: TestTokens.token(token), references: ["m1"])
    }

    /// A page of `count` devices, tokens 10, 20, 30…, and the tokens between
    /// them it skipped as dead.
    static func page(_ count: Int, skipped: [Int] = [], mayHaveMore: Bool = false) -> DevicePage {
        let devices = (1...count).map { device($0 * 10) }
        let last = ([count * 10] + skipped).max().map(TestTokens.token)
        return DevicePage(devices: devices, skipped: skipped.map(TestTokens.token), last: last, mayHaveMore: mayHaveMore)
    }

    static func result(of settlement: Settlement) throws -> WorkResult {
        guard case .finish(let result) = settlement else {
            Issue.record("expected a finish, got \(settlement)")
            throw CancellationError()
        }
        return result
    }

    // MARK: - Pages

    @Test func aPageAnsweredWholeIsCountedDeviceByDevice() throws {
        let since = Self.now.addingTimeInterval(-86_400)
        let sending = Sending(devices: [
            Sending.Device(.accepted, pushes: 1, history: HistoryCarried(carried: 2, leftOut: 1)),
            Sending.Device(.tokenDead(since: since, reason: "Unregistered"), pushes: 0),
            Sending.Device(.retry(after: .seconds(5), reason: "TooManyRequests"), pushes: 0),
            Sending.Device(.failed(reason: "BadTopic"), pushes: 0),
        ])
        let result = try Self.result(
            of: Settlement.page(
                Self.item(), after: nil, through: nil, page: Self.page(4, skipped: [45]), sending: sending, retryBudget: Self.budget,
                now: Self.now))
        #expect(result.counts == RetractionCounts(sent: 1, dead: 2, retrying: 1, failed: 1, skipped: 1))
        #expect(result.pushes == PushesSent(total: 1, mostToOneDevice: 1, historyCarried: 2, historyLeftOut: 1))
        #expect(result.deadTokens == [DeadToken(token: TestTokens.token(20), since: since, reason: "Unregistered", learnedAt: Self.now)])
        #expect(result.retries.map(\.device.token) == [TestTokens.token(30)])
        #expect(result.retries.first?.failingSince == Self.now)
        #expect(result.failures == ["BadTopic": 1])
        #expect(result.remainders.isEmpty)
        #expect(result.stopReason == nil)
    }

    /// A pool whose connections come back one by one answers some of a
    /// burst: those are settled, and each run of the others waits as a page.
    @Test func aPartAnsweredPageSettlesTheAnsweredAndQueuesEachRunOfTheRest() throws {
        let waiting = Self.now.addingTimeInterval(-10)
        let low = TestTokens.token(0)
        let high = TestTokens.token(999)
        var sending = Sending(count: 6)
        sending.devices[0] = Sending.Device(.unreachable(reason: "cannot connect"))
        sending.devices[2] = Sending.Device(.accepted, pushes: 1)
        sending.devices[3] = Sending.Device(.accepted, pushes: 1)
        // 1 was never sent (nil); 4 and 5 did not reach the service.
        sending.devices[4] = Sending.Device(.unreachable(reason: "cannot connect"))
        sending.devices[5] = Sending.Device(.unreachable(reason: "cannot connect"))
        sending.unreachable = "cannot connect"
        let result = try Self.result(
            of: Settlement.page(
                Self.item(waitingSince: waiting), after: low, through: high, page: Self.page(6, skipped: [25, 55]),
                sending: sending, retryBudget: Self.budget, now: Self.now))
        #expect(result.counts.sent == 2)
        // Tokens 10 and 20 wait from the claim's lower bound; 50 and 60 up to its upper bound; half the wait so far each.
        #expect(
            result.remainders == [
                PageRemainder(after: low, through: TestTokens.token(20), waiting: 2, delay: .seconds(5), reason: "cannot connect"),
                PageRemainder(after: TestTokens.token(40), through: high, waiting: 2, delay: .seconds(5), reason: "cannot connect"),
            ])
        // Skipped token 55 lies in the second remainder: counted when it is read. Token 25 lies in neither.
        #expect(result.counts.dead == 1)
        #expect(result.counts.skipped == 1)
    }

    @Test func aPageTheServiceNeverAnsweredGoesBackWhole() {
        var sending = Sending(count: 3)
        sending.devices[0] = Sending.Device(.unreachable(reason: "TLS handshake failed"))
        sending.unreachable = "TLS handshake failed"
        let settlement = Settlement.page(
            Self.item(), after: nil, through: nil, page: Self.page(3), sending: sending, retryBudget: Self.budget, now: Self.now)
        #expect(settlement == .release(.unreachable("TLS handshake failed", devices: 3, retryAfter: .seconds(1))))
    }

    /// Refused credentials stop the retraction: what was answered is counted,
    /// nothing waits for the service, and the result carries the reason.
    @Test func aStopReasonFinishesThePageWithoutRemainders() throws {
        var sending = Sending(count: 3)
        sending.devices[0] = Sending.Device(.accepted, pushes: 1)
        sending.devices[1] = Sending.Device(.authenticationFailed(reason: "InvalidProviderToken"))
        sending.stopReason = "apns refused the app's credentials"
        sending.unreachable = "cannot connect"
        let result = try Self.result(
            of: Settlement.page(
                Self.item(), after: nil, through: nil, page: Self.page(3), sending: sending, retryBudget: Self.budget, now: Self.now))
        #expect(result.stopReason == "apns refused the app's credentials")
        #expect(result.counts == RetractionCounts(sent: 1))
        #expect(result.remainders.isEmpty)
    }

    @Test func anotherLanesStopGivesTheItemBack() {
        var sending = Sending(count: 2)
        sending.devices[0] = Sending.Device(.accepted, pushes: 1)
        sending.interruptedByStop = true
        let page = Settlement.page(
            Self.item(), after: nil, through: nil, page: Self.page(2), sending: sending, retryBudget: Self.budget, now: Self.now)
        #expect(page == .release(.stopping))
        let push = Settlement.push(
            Self.item(.push(Self.device(1))), device: Self.device(1), sending: sending, retryBudget: Self.budget, now: Self.now)
        #expect(push == .release(.stopping))
    }

    @Test func aCancelHeardMidPageCountsWhatWentAndQueuesTheRestForTheLedgerToDropOrSend() throws {
        var sending = Sending(count: 4)
        sending.devices[0] = Sending.Device(.accepted, pushes: 1)
        sending.devices[1] = Sending.Device(.accepted, pushes: 1)
        sending.interruptedByCancel = true
        // Tokens 10…40, dead 15 and 35 skipped: 15 lies before the rest and is counted now; 35 lies in it.
        let result = try Self.result(
            of: Settlement.page(
                Self.item(), after: TestTokens.token(5), through: TestTokens.token(50), page: Self.page(4, skipped: [15, 35]),
                sending: sending, retryBudget: Self.budget, now: Self.now))
        #expect(result.counts == RetractionCounts(sent: 2, dead: 1, skipped: 1))
        #expect(
            result.remainders == [
                PageRemainder(
                    after: TestTokens.token(20), through: TestTokens.token(50), waiting: 0, delay: .zero,
                    reason: Settlement.interruptedByCancel)
            ])
        // Heard before the first push: the whole page is the rest.
        let untouched = try Self.result(
            of: Settlement.page(
                Self.item(), after: nil, through: nil, page: Self.page(2),
                sending: {
                    var sending = Sending(count: 2)
                    sending.interruptedByCancel = true
                    return sending
                }(), retryBudget: Self.budget, now: Self.now))
        #expect(untouched.counts == RetractionCounts())
        #expect(untouched.remainders.map(\.after) == [nil] && untouched.remainders.map(\.through) == [nil])
        // A retry not sent goes back; one sent is counted.
        var unsent = Sending(count: 1)
        unsent.interruptedByCancel = true
        let retry = Self.item(.push(Self.device(1)))
        #expect(
            Settlement.push(retry, device: Self.device(1), sending: unsent, retryBudget: Self.budget, now: Self.now)
                == .release(.stopping))
        unsent.devices[0] = Sending.Device(.accepted, pushes: 1)
        let sent = try Self.result(
            of: Settlement.push(retry, device: Self.device(1), sending: unsent, retryBudget: Self.budget, now: Self.now))
        #expect(sent.counts == RetractionCounts(sent: 1, retrying: -1))
    }

    @Test func aFullPageSplitsAtItsLastDevice() {
        let through = TestTokens.token(500)
        let full = Settlement.split(Self.page(3, skipped: [35], mayHaveMore: true), through: through)
        #expect(full.splitAt == TestTokens.token(35))
        #expect(full.end == TestTokens.token(35))
        let last = Settlement.split(Self.page(3), through: through)
        #expect(last.splitAt == nil)
        #expect(last.end == through)
    }

    // MARK: - Queued retries

    /// The time a retry waited for an unreachable service does not count
    /// against its budget: past the budget by the clock, within it by the
    /// time it could have been sent, it is retried again.
    @Test func aRetrysBudgetDoesNotRunWhileItWaitsForItsService() throws {
        let device = Self.device(1)
        let firstFailed = Self.now.addingTimeInterval(-5000)
        let waitingSince = Self.now.addingTimeInterval(-4000)
        var sending = Sending(count: 1)
        sending.devices[0] = Sending.Device(.retry(after: .seconds(2), reason: "TooManyRequests"))
        let item = Self.item(.push(device), attempts: 4, firstFailedAt: firstFailed, waitingSince: waitingSince)
        let result = try Self.result(
            of: Settlement.push(item, device: device, sending: sending, retryBudget: Self.budget, now: Self.now))
        #expect(result.retries.map(\.attempts) == [4])
        #expect(result.retries.first?.failingSince == firstFailed.addingTimeInterval(4000))
        #expect(result.counts.retrying == 0)
        // Without the wait, the budget is spent: the device fails, and leaves `retrying`.
        let spent = try Self.result(
            of: Settlement.push(
                Self.item(.push(device), attempts: 4, firstFailedAt: firstFailed), device: device, sending: sending,
                retryBudget: Self.budget, now: Self.now))
        #expect(spent.retries.isEmpty)
        #expect(spent.counts == RetractionCounts(retrying: -1, failed: 1))
        #expect(spent.failures == ["no success within the 1 h retry budget: TooManyRequests": 1])
    }

    @Test func aRetryThatCannotReachItsServiceWaitsForIt() {
        var sending = Sending(count: 1)
        sending.devices[0] = Sending.Device(.unreachable(reason: "connection refused"))
        sending.unreachable = "connection refused"
        let item = Self.item(.push(Self.device(1)), waitingSince: Self.now.addingTimeInterval(-300))
        let settlement = Settlement.push(item, device: Self.device(1), sending: sending, retryBudget: Self.budget, now: Self.now)
        #expect(settlement == .release(.unreachable("connection refused", devices: 1, retryAfter: .seconds(15))))
    }

    @Test func aRetryWhoseTokenDiedSinceIsCountedDeadAndNotSent() throws {
        let result = try Self.result(of: Settlement.retryFoundDead(Self.item(.push(Self.device(1)))))
        #expect(result.counts == RetractionCounts(dead: 1, retrying: -1))
        #expect(result.retries.isEmpty && result.deadTokens.isEmpty)
    }

    // MARK: - Giving up and giving back

    @Test func anItemIsGivenUpAfterItsAttemptsOrAnOutageTooLong() {
        let rules = ItemRules(lease: .seconds(60), itemAttempts: 3, outageLimit: .seconds(600))
        #expect(rules.giveUpReason(for: Self.item(claims: 3), now: Self.now) == nil)
        #expect(
            rules.giveUpReason(for: Self.item(claims: 4, lastError: "the database refused it"), now: Self.now)
                == "given up after 3 attempts: the database refused it")
        #expect(rules.giveUpReason(for: Self.item(claims: 4), now: Self.now)?.contains("the worker died, or lost its lease") == true)
        #expect(rules.giveUpReason(for: Self.item(waitingSince: Self.now.addingTimeInterval(-600)), now: Self.now) == nil)
        #expect(
            rules.giveUpReason(
                for: Self.item(lastError: "cannot connect", waitingSince: Self.now.addingTimeInterval(-601)), now: Self.now)
                == "the service could not be reached for 10 min: cannot connect")
    }

    /// A stop and a dropped connection are not attempts; any other failure
    /// is, and backs off 1 s doubling per claim, at most a lease.
    @Test func anItemGoesBackAsItsFailureSays() {
        let rules = ItemRules(lease: .seconds(60), itemAttempts: 10, outageLimit: .seconds(600))
        #expect(rules.extensionInterval == .seconds(20))
        #expect(rules.giveBack(Self.item(), after: nil, draining: false) == .release(.stopping))
        let refused = StoreError(.checkViolation, "finishing: refused")
        #expect(
            rules.giveBack(Self.item(claims: 1), after: refused, draining: false)
                == .release(.failed("finishing: refused", retryAfter: .seconds(1))))
        #expect(
            rules.giveBack(Self.item(claims: 4), after: refused, draining: false)
                == .release(.failed("finishing: refused", retryAfter: .seconds(8))))
        #expect(
            rules.giveBack(Self.item(claims: 9), after: refused, draining: false)
                == .release(.failed("finishing: refused", retryAfter: .seconds(60))))
        let lost = StoreError(.connectionLost, "finishing: the database connection was lost")
        #expect(
            rules.giveBack(Self.item(), after: lost, draining: false) == .onceReconnected(.interrupted(lost.message), for: .seconds(60)))
        #expect(rules.giveBack(Self.item(), after: lost, draining: true) == .onceReconnected(.interrupted(lost.message), for: .zero))
    }

    @Test func durationsAreSpokenInTheirLargestWholeUnit() {
        #expect(Duration.milliseconds(250).spoken == "250 ms")
        #expect(Duration.seconds(45).spoken == "45 s")
        #expect(Duration.seconds(300).spoken == "5 min")
        #expect(Duration.seconds(7200).spoken == "2 h")
        #expect(Duration.seconds(90).spoken == "90 s")
    }
}
