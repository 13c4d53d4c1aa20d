import Foundation
import NIOConcurrencyHelpers

/// When each device's phone was offline, by lowercase hex token: set with
/// ``APNsSimulator/takeOffline(deviceToken:)`` or `POST /offline/<token>`.
final class OfflineDevices: Sendable {
    private let periods = NIOLockedValueBox<[String: [APNsSimulatedDevice.OfflinePeriod]]>([:])

    /// The phone goes offline at `time`; nothing changes if it already is.
    func takeOffline(_ token: String, at time: Date) {
        periods.withLockedValue { periods in
            let token = token.lowercased()
            if let last = periods[token]?.last, last.end == nil { return }
            periods[token, default: []].append(APNsSimulatedDevice.OfflinePeriod(start: time))
        }
    }

    /// The phone is back at `time`; nothing changes if it was online.
    func bringOnline(_ token: String, at time: Date) {
        periods.withLockedValue { periods in
            let token = token.lowercased()
            guard var all = periods[token], let last = all.last, last.end == nil else { return }
            all[all.count - 1].end = max(time, last.start)
            periods[token] = all
        }
    }

    func periods(for token: String) -> [APNsSimulatedDevice.OfflinePeriod] {
        periods.withLockedValue { $0[token.lowercased()] ?? [] }
    }
}

extension APNsPhoneMix {
    /// The phone `token` is, with the times it was offline.
    func phone(for token: String, offline: OfflineDevices) -> APNsSimulatedDevice.Phone {
        var phone = phone(for: token)
        phone.offline = offline.periods(for: token)
        return phone
    }
}
