import APNsSimulator
import Foundation
import Testing

/// The phone model's rules that keep only the latest push: iOS waking a
/// suspended app once for a burst of background pushes, and APNs storing
/// one push for an offline phone. Hand-made pushes, no network.
@Suite("Phone replay")
struct PhoneReplayTests {
    typealias Phone = APNsSimulatedDevice.Phone
    typealias OfflinePeriod = APNsSimulatedDevice.OfflinePeriod

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// `message`'s original alert, sent `at` seconds after ``start``.
    static func original(_ message: String, at seconds: TimeInterval) -> APNsReceivedPush {
        push(
            type: "alert", collapseID: message, at: seconds,
            #"{"aps":{"alert":{"body":"text of \#(message)"}},"notificationCustomData":{"pushNotificationReferenceId":"\#(message)"}}"#)
    }

    /// The background push that retracts `message`, sent `at` seconds after ``start``.
    static func retraction(_ message: String, at seconds: TimeInterval) -> APNsReceivedPush {
        push(
            type: "background", collapseID: nil, at: seconds,
            #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"\#(message)","isReferredNotificationMustRemoved":true}}"#
        )
    }

    static func push(type: String, collapseID: String?, at seconds: TimeInterval, _ body: String) -> APNsReceivedPush {
        var headers = ["apns-push-type": type, "apns-priority": type == "background" ? "5" : "10"]
        headers["apns-collapse-id"] = collapseID
        return APNsReceivedPush(apnsID: UUID(), headers: headers, body: Data(body.utf8), receivedAt: start.addingTimeInterval(seconds))
    }

    /// From `from` to `to` seconds after ``start``; still offline without `to`.
    static func offline(_ from: TimeInterval, _ to: TimeInterval? = nil) -> OfflinePeriod {
        OfflinePeriod(start: start.addingTimeInterval(from), end: to.map { start.addingTimeInterval($0) })
    }

    static func showing(_ screen: APNsSimulatedDevice.Screen) -> [String] {
        screen.texts.keys.sorted()
    }

    @Test func twoRetractionsWithinTheBurstWindowReachTheAppAsTheLaterOnly() async {
        let pushes = [Self.original("m1", at: 0), Self.original("m2", at: 1), Self.retraction("m1", at: 10), Self.retraction("m2", at: 12)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(burstWindow: 10))
        // The app was woken once, for m2: m1, named only by the first, stays.
        #expect(Self.showing(screen) == ["m1"])
        #expect(screen.coalesced == 1)
        #expect(screen.outcomes.count == 1)
        #expect(screen.dropped == 0)
    }

    @Test func retractionsFurtherApartThanTheWindowAreBothHandled() async {
        let pushes = [Self.original("m1", at: 0), Self.original("m2", at: 1), Self.retraction("m1", at: 10), Self.retraction("m2", at: 21)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(burstWindow: 10))
        #expect(Self.showing(screen).isEmpty)
        #expect(screen.coalesced == 0)
        #expect(screen.outcomes.count == 2)
    }

    @Test func withoutABurstWindowEveryBackgroundPushIsHandedOver() async {
        let pushes = [Self.original("m1", at: 0), Self.original("m2", at: 1), Self.retraction("m1", at: 10), Self.retraction("m2", at: 10)]
        for phone in [Phone(), Phone(burstWindow: 0)] {
            let screen = await APNsSimulatedDevice.replay(pushes, on: phone)
            #expect(Self.showing(screen).isEmpty)
            #expect(screen.coalesced == 0)
        }
    }

    @Test func aBurstOfThreeWakesTheAppOnceWithTheLast() async {
        let pushes = [
            Self.retraction("m1", at: 0), Self.retraction("m2", at: 5), Self.retraction("m3", at: 9), Self.retraction("m4", at: 30),
        ]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(burstWindow: 10))
        #expect(screen.coalesced == 2)
        #expect(screen.outcomes.count == 2)
    }

    @Test func alertsAreNotCoalesced() async {
        let pushes = [Self.original("m1", at: 0), Self.original("m2", at: 1), Self.original("m3", at: 2)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(burstWindow: 10))
        #expect(Self.showing(screen) == ["m1", "m2", "m3"])
        #expect(screen.coalesced == 0)
    }

    @Test func anAlertBetweenTwoRetractionsDoesNotEndTheBurst() async {
        let pushes = [
            Self.original("m1", at: 0), Self.retraction("m1", at: 10), Self.original("m2", at: 11), Self.retraction("m9", at: 12),
        ]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(burstWindow: 10))
        #expect(Self.showing(screen) == ["m1", "m2"])
        #expect(screen.coalesced == 1)
    }

    @Test(arguments: [Phone(appState: .forceQuit, burstWindow: 10), Phone(appState: .lowPower, burstWindow: 10)])
    func anAppThatGetsNoBackgroundPushesCountsThemDroppedNotCoalesced(phone: Phone) async {
        let pushes = [Self.original("m1", at: 0), Self.retraction("m1", at: 10), Self.retraction("m2", at: 12)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: phone)
        #expect(Self.showing(screen) == ["m1"])
        #expect(screen.dropped == 2)
        #expect(screen.coalesced == 0)
    }

    @Test func coalescedPushesDoNotSpendTheBudget() async {
        // Budget 1: the burst costs one hand-over, so the retraction after it is over budget.
        let pushes = [
            Self.original("m3", at: 0), Self.retraction("m1", at: 10), Self.retraction("m2", at: 12), Self.retraction("m3", at: 100),
        ]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(backgroundBudget: 1, burstWindow: 10))
        #expect(screen.coalesced == 1)
        #expect(screen.dropped == 1)
        #expect(Self.showing(screen) == ["m3"])
    }

    @Test func aPhoneOfflineThroughTwoRetractionsGetsOnlyTheLater() async {
        let pushes = [
            Self.original("m1", at: 0), Self.original("m2", at: 1), Self.retraction("m1", at: 100), Self.retraction("m2", at: 200),
        ]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(offline: [Self.offline(50, 300)]))
        #expect(Self.showing(screen) == ["m1"])
        #expect(screen.storedAndReplaced == 1)
        #expect(screen.stored == 0)
        #expect(screen.outcomes.count == 1)
    }

    @Test func aPhoneOfflineThroughARetractionAndTheNextMessageShowsBoth() async {
        let pushes = [Self.original("m1", at: 0), Self.retraction("m1", at: 100), Self.original("m2", at: 200)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(offline: [Self.offline(50, 300)]))
        // The retraction never arrives: the deleted m1 stays beside m2, for the extension's feed catch-up to remove.
        #expect(Self.showing(screen) == ["m1", "m2"])
        #expect(screen.storedAndReplaced == 1)
        #expect(screen.outcomes.isEmpty)
    }

    @Test func aPhoneStillOfflineHasTheLatestPushWaiting() async {
        let pushes = [Self.original("m1", at: 0), Self.retraction("m1", at: 100), Self.original("m2", at: 200)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(offline: [Self.offline(50)]))
        #expect(Self.showing(screen) == ["m1"])
        #expect(screen.storedAndReplaced == 1)
        #expect(screen.stored == 1)
    }

    @Test func thePushStoredWhileOfflineArrivesWhenThePhoneIsBackBeforeLaterOnes() async {
        // m2's original arrives on reconnecting at 300, then its retraction at 400.
        let pushes = [Self.original("m1", at: 100), Self.original("m2", at: 200), Self.retraction("m2", at: 400)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(offline: [Self.offline(50, 300)]))
        #expect(Self.showing(screen).isEmpty)
        #expect(screen.storedAndReplaced == 1)
    }

    @Test func theStoredPushAndALaterOneCanMakeABurst() async {
        // The stored retraction of m1 arrives at 300, m2's at 305: the app is woken once, for m2.
        let pushes = [
            Self.original("m1", at: 0), Self.original("m2", at: 1), Self.retraction("m1", at: 100), Self.retraction("m2", at: 305),
        ]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(burstWindow: 10, offline: [Self.offline(50, 300)]))
        #expect(Self.showing(screen) == ["m1"])
        #expect(screen.coalesced == 1)
        #expect(screen.storedAndReplaced == 0)
    }

    @Test func pushesOutsideTheOfflinePeriodsArriveAsSent() async {
        let pushes = [Self.original("m1", at: 0), Self.retraction("m1", at: 400), Self.original("m2", at: 500)]
        let screen = await APNsSimulatedDevice.replay(pushes, on: Phone(offline: [Self.offline(50, 300), Self.offline(600)]))
        #expect(Self.showing(screen) == ["m2"])
        #expect(screen.storedAndReplaced == 0)
        #expect(screen.stored == 0)
    }

    @Test func aPhoneDecodesFromJSONWrittenBeforeTheNewFields() throws {
        let old = Data(#"{"appState":"force-quit","backgroundBudget":3,"serviceExtension":"unfiltered"}"#.utf8)
        let phone = try JSONDecoder().decode(Phone.self, from: old)
        #expect(phone == Phone(appState: .forceQuit, serviceExtension: .unfiltered, backgroundBudget: 3))
        let new = Phone(burstWindow: 10, offline: [Self.offline(50, 300), Self.offline(600)])
        #expect(try JSONDecoder().decode(Phone.self, from: JSONEncoder().encode(new)) == new)
    }
}
