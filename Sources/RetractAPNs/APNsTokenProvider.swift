import Foundation
import NIOConcurrencyHelpers

/// Makes and shares the provider token all concurrent sends use.
final class APNsTokenProvider: Sendable {
    struct Token: Sendable {
        /// The `authorization` header value.
        var bearer: String
        var generation: Int
    }

    private struct State {
        var schedule = TokenSchedule()
        var token: Token?
    }

    private let key: APNsSigningKey
    private let keyID: String
    private let teamID: String
    private let now: @Sendable () -> Date
    private let state = NIOLockedValueBox(State())

    init(key: APNsSigningKey, keyID: String, teamID: String, now: @escaping @Sendable () -> Date) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.now = now
    }

    /// The token to send with now, made anew when the current one is 50 minutes old.
    func current() throws(APNsError) -> Token {
        let result: Result<Token, APNsError> = state.withLockedValue { state in
            let at = now()
            if let token = state.token, !state.schedule.needsToken(at: at) { return .success(token) }
            return Result { () throws(APNsError) in try make(at: at, early: false, in: &state) }
        }
        return try result.get()
    }

    /// APNs said `token` expired: the token to send again with, or nil when a
    /// new one may not be made yet.
    func expired(_ token: Token) throws(APNsError) -> Token? {
        let result: Result<Token?, APNsError> = state.withLockedValue { state in
            let at = now()
            switch state.schedule.expiryReported(generation: token.generation, at: at) {
            case .useCurrent: return .success(state.token)
            case .refuse: return .success(nil)
            case .refresh: return Result { () throws(APNsError) in try make(at: at, early: true, in: &state) }
            }
        }
        return try result.get()
    }

    /// How many tokens were made, for tests and metrics.
    var tokensMade: Int {
        state.withLockedValue { $0.schedule.current?.generation ?? 0 }
    }

    private func make(at now: Date, early: Bool, in state: inout State) throws(APNsError) -> Token {
        let jwt: String
        do {
            jwt = try APNsJWT.make(key: key, keyID: keyID, teamID: teamID, issuedAt: now)
        } catch {
            throw APNsError.authenticationUnavailable("signing the provider token failed")
        }
        let token = Token(bearer: "bearer " + jwt, generation: state.schedule.issued(at: now, early: early))
        state.token = token
        return token
    }
}
