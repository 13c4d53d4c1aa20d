import APNsSimulator
import RetractKit

extension APNsSimulator {
    /// What `tokens`' phones show, summed: how many show each notification
    /// (by identifier), and how many background pushes iOS dropped for a later one.
    package func screens(of tokens: [DeviceToken]) async -> (showing: [String: Int], coalesced: Int) {
        var showing: [String: Int] = [:]
        var coalesced = 0
        for token in tokens {
            let screen = await screen(of: token.hex)
            for notification in screen.showing { showing[notification.identifier, default: 0] += 1 }
            coalesced += screen.coalesced
        }
        return (showing, coalesced)
    }
}
