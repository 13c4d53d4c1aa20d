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
            // each period, delivered when the phone is back. The list's order
            // is kept otherwise: callers may mix in pushes of their own making.
            var online: [(push: APNsReceivedPush, at: Date)] = []
            var held: [Int: APNsReceivedPush] = [:]
            for push in pushes {
                guard let period = phone.offline.firstIndex(where: { $0.contains(push.receivedAt) }) else {
                    online.append((push, push.receivedAt))
                    continue
                }
                if held[period] != nil { storedAndReplaced += 1 }
                held[period] = push
            }
            for (period, push) in held.sorted(by: { $0.key > $1.key }) {
                guard let end = phone.offline[period].end else {
                    stored += 1
                    continue
                }
                let position = online.firstIndex { $0.at >= end } ?? online.endIndex
                online.insert((push, end), at: position)
            }

            // iOS wakes a suspended app once for a burst of background pushes, with the latest.
            let window = phone.appState == .background ? phone.burstWindow ?? 0 : 0
            var dropped = Set<Int>()
            if window > 0 {
                let background = online.indices.filter { online[$0].push.pushType == "background" }
                for (index, next) in zip(background, background.dropFirst())
                where abs(online[next].at.timeIntervalSince(online[index].at)) < window {
                    dropped.insert(index)
                }
            }
            coalesced = dropped.count
            delivered = online.indices.filter { !dropped.contains($0) }.map { (online[$0].push, online[$0].at) }
        }
    }
}
