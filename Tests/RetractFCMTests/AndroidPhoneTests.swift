import FCMSimulator
import Foundation
import Testing

/// What FCM and Android hand an app on a simulated phone, by the phone's state.
@Suite("Android phone model")
struct AndroidPhoneTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func message(
        at second: Double, priority: String? = "HIGH", notification: [String: String]? = nil, data: [String: String] = ["k": "v"]
    ) -> FCMReceivedMessage {
        FCMReceivedMessage(
            token: "t", project: "p", data: data, androidPriority: priority, androidNotification: notification,
            receivedAt: start.addingTimeInterval(second))
    }

    @Test func inTheBackgroundFirebaseShowsNotificationsUnderTheirTagAndTheAppGetsTheData() {
        let messages = [
            Self.message(at: 0, notification: ["title": "Sale", "tag": "msg-1"]),
            Self.message(at: 1, notification: ["body": "no tag"]),
            Self.message(at: 2, data: ["notificationCustomData": "{}"]),
        ]
        let delivery = AndroidPhone().delivery(of: messages)
        #expect(
            delivery.events == [
                .display(tag: "msg-1", title: "Sale"), .display(tag: "FCM-Notification:1", body: "no tag"),
                .data(["notificationCustomData": "{}"]),
            ])
        #expect(delivery.undelivered == 0)
        #expect(delivery.deferred == 0)
    }

    @Test func aForceStoppedAppGetsNothingFromTheMomentItWasStopped() {
        let messages = [Self.message(at: 0, notification: ["tag": "m1"]), Self.message(at: 10), Self.message(at: 11)]
        let delivery = AndroidPhone(forceStoppedSince: Self.start.addingTimeInterval(5)).delivery(of: messages)
        #expect(delivery.events == [.display(tag: "m1")])
        #expect(delivery.undelivered == 2)
    }

    @Test func dozeHoldsNormalPriorityAndWhatFirebaseLoweredButNotHighPriority() {
        let messages = [
            Self.message(at: 0, priority: "HIGH", data: ["high": "1"]),
            Self.message(at: 1, priority: "NORMAL", data: ["normal": "1"]),
            // A data message's default priority is normal; a notification message's, high.
            Self.message(at: 2, priority: nil, data: ["default": "1"]),
            Self.message(at: 3, priority: nil, notification: ["tag": "shown"]),
        ]
        let dozing = AndroidPhone(dozing: true).delivery(of: messages)
        #expect(dozing.events == [.data(["high": "1"]), .display(tag: "shown")])
        #expect(dozing.deferred == 2)
        // Lowered: high-priority data messages count as normal; notifications keep their priority.
        let lowered = AndroidPhone(dozing: true, priorityLowered: true).delivery(of: messages)
        #expect(lowered.events == [.display(tag: "shown")])
        #expect(lowered.deferred == 3)
        // An original for the app to show results in a notification: Firebase does not lower it.
        let original = Self.message(at: 4, priority: "HIGH", data: ["title": "Ada", "notificationCustomData": "{}"])
        #expect(AndroidPhone(dozing: true, priorityLowered: true).delivery(of: [original]).events.count == 1)
        // Awake, lowered priority only delays: everything arrives.
        #expect(AndroidPhone(priorityLowered: true).delivery(of: messages).events.count == 4)
    }
}
