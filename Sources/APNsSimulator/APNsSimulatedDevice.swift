import Foundation
import RetractKit
import SimulatorSupport

/// What a device shows after the pushes it received, worked out with the
/// same RetractKit code an app runs: visible pushes land in Notification
/// Center (identified by `apns-collapse-id`, else the apns-id, as iOS does),
/// and each background push goes to ``RetractionHandler``.
public enum APNsSimulatedDevice {
    /// What a device that received `pushes` (in the order received) ends up showing, and
    /// what each background push did.
    public static func replay(_ pushes: [APNsReceivedPush]) async -> (showing: [DeliveredNotification], outcomes: [RetractionOutcome]) {
        let center = InMemoryNotificationCenter()
        let handler = RetractionHandler(center: center)
        var outcomes: [RetractionOutcome] = []
        for push in pushes {
            if push.pushType == "background" {
                outcomes.append(await handler.handle(userInfo: push.userInfo))
            } else {
                center.deliver(DeliveredNotification(identifier: push.collapseID ?? push.apnsID.uuidString, userInfo: push.userInfo))
            }
        }
        return (center.delivered, outcomes)
    }
}
