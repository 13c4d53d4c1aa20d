import Foundation

/// When to make a new provider token. Pure state: `APNsTokenProvider` owns one
/// and drives it with its clock.
///
/// APNs refuses tokens older than an hour and connections that change tokens
/// more often than every 20 minutes. A token is therefore replaced at
/// `refreshAge` (50 minutes), and only sooner once after APNs reports it
/// expired (a clock skew, say); a second early replacement waits for the
/// 20 minutes.
struct TokenSchedule {
    var refreshAge: TimeInterval = 50 * 60
    var minimumInterval: TimeInterval = 20 * 60

    /// The token in use: its generation counts the tokens made so far.
    private(set) var current: (generation: Int, issuedAt: Date, early: Bool)?

    enum ExpiryDecision: Equatable {
        /// A newer token exists already: send again with it.
        case useCurrent
        /// Make a new token now.
        case refresh
        /// The early refresh was used; the credentials are the problem.
        case refuse
    }

    func needsToken(at now: Date) -> Bool {
        guard let current else { return true }
        return now.timeIntervalSince(current.issuedAt) >= refreshAge
    }

    /// Records a token made at `now`; returns its generation.
    mutating func issued(at now: Date, early: Bool = false) -> Int {
        let generation = (current?.generation ?? 0) + 1
        current = (generation, now, early)
        return generation
    }

    /// APNs answered `ExpiredProviderToken` to a request signed with `generation`.
    func expiryReported(generation: Int, at now: Date) -> ExpiryDecision {
        guard let current, current.generation == generation else { return .useCurrent }
        if now.timeIntervalSince(current.issuedAt) >= minimumInterval || !current.early { return .refresh }
        return .refuse
    }
}
