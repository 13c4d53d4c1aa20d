import Foundation
import SimulatorSupport

extension APNsSimulatedDevice {
    /// The pushes that reach a phone and when, once APNs and iOS have kept
    /// only the latest: before the app's own rules (force-quit, Low Power
    /// Mode, budget, service extension) see them.
    struct Arrivals {
        /// What reaches the phone, in the order it arrives, with when.
        var delivered: [(push: APNsReceivedPush, at: Date)]
        /// Background pushes dropped for a later one within the burst window.
        var coalesced = 0
        /// Pushes stored for an offline phone and replaced by a later one.
        var storedAndReplaced = 0
        /// Pushes stored for a phone that is still offline.
        var stored = 0

        init(_ pushes: [APNsReceivedPush], on phone: Phone) {
            // APNs holds one push per app for an offline phone: the latest of
            // each period, delivered when the phone is back.
            var online: [(push: APNsReceivedPush, at: Date, order: Int)] = []
            var held: [Int: (push: APNsReceivedPush, order: Int)] = [:]
            for (order, push) in pushes.enumerated() {
                guard let period = phone.offline.firstIndex(where: { $0.contains(push.receivedAt) }) else {
                    online.append((push, push.receivedAt, order))
                    continue
                }
                if held[period] != nil { storedAndReplaced += 1 }
                held[period] = (push, order)
            }
            for (period, kept) in held {
                guard let end = phone.offline[period].end else {
                    stored += 1
                    continue
                }
                online.append((kept.push, end, kept.order))
            }
            online.sort { ($0.at, $0.order) < ($1.at, $1.order) }

            // iOS wakes a suspended app once for a burst of background pushes, with the latest.
            let window = phone.appState == .background ? phone.burstWindow ?? 0 : 0
            var dropped = Set<Int>()
            if window > 0 {
                let background = online.indices.filter { online[$0].push.pushType == "background" }
                for (index, next) in zip(background, background.dropFirst())
                where online[next].at.timeIntervalSince(online[index].at) < window {
                    dropped.insert(index)
                }
            }
            coalesced = dropped.count
            delivered = online.indices.filter { !dropped.contains($0) }.map { (online[$0].push, online[$0].at) }
        }
    }
}
