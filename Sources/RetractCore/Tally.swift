import Foundation
import RetractKit
import RetractModel
import RetractStore

/// What sending to some devices of one work item came to, as the ledger
/// takes it (a ``WorkResult``): counts, retries to queue, tokens found dead
/// and failures by reason. Pure: the time is passed in.
package struct Tally: Sendable {
    /// How long a device is retried after its first retryable answer.
    package let budget: Duration
    package var counts = RetractionCounts()
    package var pushes = PushesSent()
    package var retries: [PushRetry] = []
    package var dead: [DeadToken] = []
    package var failures: [String: Int] = [:]

    package init(budget: Duration) {
        self.budget = budget
    }

    /// - Parameters:
    ///   - pushes: how many of the device's pushes the service accepted.
    ///   - history: how many of its earlier retractions' references its pushes carried, and how many did not fit.
    ///   - isRetry: the device was a queued retry, counted in `retrying` until now.
    ///   - failingSince: when the device was first answered with a retryable error, if it was.
    ///   - now: the time of the answer.
    package mutating func add(
        _ outcome: PushOutcome, for device: DeviceReferences, pushes: Int = 1, history: HistoryCarried = HistoryCarried(),
        attempt: Int, isRetry: Bool, failingSince: Date?, now: Date
    ) {
        let settled = isRetry ? -1 : 0
        self.pushes.add(PushesSent(total: pushes, mostToOneDevice: pushes))
        if case .accepted = outcome {
            self.pushes.add(PushesSent(historyCarried: history.carried, historyLeftOut: history.leftOut))
        }
        switch outcome {
        case .accepted:
            counts.sent += 1
            counts.retrying += settled
        case .tokenDead(let since, let reason):
            counts.dead += 1
            counts.retrying += settled
            dead.append(DeadToken(token: device.token, since: since, reason: reason, learnedAt: now))
        case .retry(let delay, let reason):
            let since = failingSince ?? now
            guard now.timeIntervalSince(since) < budget.inSeconds else {
                fail(reason: "no success within the \(budget.spoken) retry budget: \(reason)", isRetry: isRetry)
                return
            }
            retries.append(PushRetry(device: device, delay: delay, attempts: attempt, lastError: reason, failingSince: since))
            counts.retrying += isRetry ? 0 : 1
        case .failed(let reason):
            fail(reason: reason, isRetry: isRetry)
        case .unreachable, .authenticationFailed:
            // Never tallied: the item waits for the service, or the retraction stops.
            break
        }
    }

    private mutating func fail(reason: String, isRetry: Bool) {
        counts.failed += 1
        counts.retrying += isRetry ? -1 : 0
        failures[reason, default: 0] += 1
    }
}

/// Of a device's recent earlier retractions, the references its pushes
/// carried and those that did not fit.
package struct HistoryCarried: Hashable, Sendable {
    package var carried = 0
    package var leftOut = 0

    package init(carried: Int = 0, leftOut: Int = 0) {
        self.carried = carried
        self.leftOut = leftOut
    }
}
