import APNsSimulator
import Foundation
import RetractKit
import SimulatorSupport

/// A banned sender's 400 messages (references of 40 characters) on each of
/// a few phones, and what those phones show after their retraction: more
/// references than one push holds.
package enum BannedSender {
    /// The messages' references, 40 characters each.
    package static let messages: [String] = (0..<400).map { "banned-sender-S1-message-" + String(format: "%015d", $0) }

    /// A retraction's account, as far as its pushes go.
    package struct Account: Decodable {
        package var sent: Int
        package var pushes: Int
        package var mostPushesToOneDevice: Int
    }

    /// The messages as each phone received them before the retraction: alerts
    /// shown under their reference.
    package static let originals: [APNsReceivedPush] = messages.map { reference in
        APNsReceivedPush(
            apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": reference],
            body: Data(#"{"aps":{"alert":{"body":"spam"}},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)"}}"#.utf8),
            receivedAt: Date.distantPast)
    }

    /// What the phones show once their burst windows have passed.
    package struct Screens: Sendable, CustomStringConvertible {
        /// Messages still showing, summed over the phones, when the app reads the feed...
        package var left = 0
        /// ...and when it does not.
        package var leftWithoutFeed = 0
        /// Background pushes iOS dropped for a later one, summed over the phones.
        package var coalesced = 0

        package var description: String { "\(left) left (\(leftWithoutFeed) without the feed), \(coalesced) coalesced" }
    }

    /// Each phone as it lives through the pushes with `feed` (the app reads
    /// it when a push says the rest is there), and without.
    package static func screens(of tokens: [DeviceToken], on simulator: APNsSimulator, feed: RetractionFeed) async throws -> Screens {
        var screens = Screens()
        // Past every burst window: each phone has handled what iOS handed it.
        let later = Date().addingTimeInterval(3600)
        for token in tokens {
            let screen = await SimulatedPhone(deviceToken: token.hex, on: simulator, feed: feed, before: originals).settle(now: later)
            screens.left += screen.showing.count
            screens.coalesced += screen.coalesced
            let withoutFeed = await APNsSimulatedDevice.replay(
                originals + simulator.inbox(for: token.hex), on: simulator.phone(of: token.hex))
            screens.leftWithoutFeed += withoutFeed.showing.count
        }
        return screens
    }
}
