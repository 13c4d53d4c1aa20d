import Foundation
import NIOConcurrencyHelpers
import SimulatorSupport

/// What the simulator has seen, across connections.
public struct APNsSimulatorStatistics: Sendable, Hashable, Codable {
    public var accepted = 0
    public var rejected = 0
    public var rejectedByReason: [String: Int] = [:]
    /// Requests refused for their provider token, by reason and the simulator's explanation.
    public var providerTokenRefusals: [String: Int] = [:]
    public var connections = 0
    /// Distinct provider tokens accepted.
    public var providerTokens = 0
    public var goAwaysSent = 0
    /// The most streams one connection had open (received, not yet answered) at once.
    public var peakConcurrentStreams = 0
    /// When the last push was accepted: when sending stopped, for one that
    /// was stopped.
    public var lastAcceptedAt: Date?
}

/// The per-device record of accepted pushes, and the counters.
final class SimulatorInbox: Sendable {
    private struct State {
        var pushes: [String: [APNsReceivedPush]] = [:]
        var statistics = APNsSimulatorStatistics()
        var providerTokens = Set<String>()
        var attempts: [String: UInt64] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let recordsPushes: Bool
    private let onTokenRefused: (@Sendable (String) -> Void)?

    init(recordsPushes: Bool, onTokenRefused: (@Sendable (String) -> Void)? = nil) {
        self.recordsPushes = recordsPushes
        self.onTokenRefused = onTokenRefused
    }

    func accepted(_ push: APNsReceivedPush, token: String) {
        state.withLockedValue { state in
            state.statistics.accepted += 1
            state.statistics.lastAcceptedAt = push.receivedAt
            if recordsPushes { state.pushes[token, default: []].append(push) }
        }
    }

    func rejected(_ reason: String, explanation: String?) {
        let firstOfItsKind = state.withLockedValue { state in
            state.statistics.rejected += 1
            state.statistics.rejectedByReason[reason, default: 0] += 1
            guard let explanation else { return nil as String? }
            let key = "\(reason): \(explanation)"
            state.statistics.providerTokenRefusals[key, default: 0] += 1
            return state.statistics.providerTokenRefusals[key] == 1 ? key : nil
        }
        if let firstOfItsKind { onTokenRefused?(firstOfItsKind) }
    }

    func tokenAccepted(_ token: String) {
        state.withLockedValue { state in
            if state.providerTokens.insert(token).inserted { state.statistics.providerTokens += 1 }
        }
    }

    func connectionOpened() {
        state.withLockedValue { $0.statistics.connections += 1 }
    }

    func openStreams(_ count: Int) {
        state.withLockedValue { $0.statistics.peakConcurrentStreams = max($0.statistics.peakConcurrentStreams, count) }
    }

    func goAwaySent() {
        state.withLockedValue { $0.statistics.goAwaysSent += 1 }
    }

    /// Counts the requests for `token`: the nth request's number, from 0.
    func nextAttempt(for token: String) -> UInt64 {
        state.withLockedValue { state in
            let attempt = state.attempts[token, default: 0]
            state.attempts[token] = attempt + 1
            return attempt
        }
    }

    func pushes(for token: String) -> [APNsReceivedPush] {
        state.withLockedValue { $0.pushes[token.lowercased()] ?? [] }
    }

    var all: [String: [APNsReceivedPush]] {
        state.withLockedValue { $0.pushes }
    }

    var statistics: APNsSimulatorStatistics {
        state.withLockedValue { $0.statistics }
    }

    func clear() {
        state.withLockedValue { state in
            state.pushes = [:]
            state.attempts = [:]
        }
    }
}

/// A number in [0, 1) fixed by the seed, the token and the attempt: the same
/// run of requests meets the same faults, whatever the interleaving.
enum FaultDice {
    static func roll(seed: UInt64, token: String, attempt: UInt64) -> Double {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        var mixed = seed &+ hash &+ attempt &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return Double(mixed >> 11) / Double(UInt64(1) << 53)
    }
}
