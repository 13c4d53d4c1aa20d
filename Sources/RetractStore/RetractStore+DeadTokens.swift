import Foundation
import Logging
import NIOCore
import PostgresNIO
import RetractKit

/// A token APNs said is no longer valid for an app.
public struct DeadToken: Hashable, Sendable {
    public var token: DeviceToken
    /// When APNs says the token stopped being valid (410's timestamp), or when
    /// it refused the token (BadDeviceToken).
    public var since: Date
    /// APNs's reason, such as `Unregistered`.
    public var reason: String

    public init(token: DeviceToken, since: Date, reason: String) {
        self.token = token
        self.since = since
        self.reason = reason
    }
}

extension RetractStore {
    /// Marks tokens dead for an app; reads skip them from then on. A token
    /// marked twice keeps its earliest time, and the reason given with it.
    public func markDead(_ tokens: [DeadToken], appID: Int64) async throws(StoreError) {
        guard !tokens.isEmpty else { return }
        try await perform("marking \(tokens.count) tokens dead", idempotent: true) {
            try await client.withConnection { connection in
                try await Self.markDead(tokens, appID: appID, on: connection, logger: logger)
            }
        }
    }

    static func markDead(_ tokens: [DeadToken], appID: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        // One row per token in a statement: ON CONFLICT cannot touch a row twice.
        var earliest: [DeviceToken: DeadToken] = [:]
        for token in tokens where earliest[token.token].map({ token.since < $0.since }) ?? true {
            earliest[token.token] = token
        }
        let rows = Array(earliest.values)
        let bytes = rows.map { ByteBuffer(bytes: $0.token.bytes) }
        let since = rows.map(\.since)
        let reasons = rows.map(\.reason)
        try await connection.query(
            """
            INSERT INTO dead_tokens (app_id, token, dead_since, reason)
            SELECT \(appID), t, s, r FROM unnest(\(bytes)::bytea[], \(since)::timestamptz[], \(reasons)::text[]) AS u (t, s, r)
            ON CONFLICT (app_id, token) DO UPDATE
            SET dead_since = excluded.dead_since, reason = excluded.reason
            WHERE excluded.dead_since < dead_tokens.dead_since
            """,
            logger: logger
        )
    }

    /// Those of `tokens` that are dead for the app.
    public func deadTokens(appID: Int64, among tokens: [DeviceToken]) async throws(StoreError) -> Set<DeviceToken> {
        guard !tokens.isEmpty else { return [] }
        let bytes = tokens.map { ByteBuffer(bytes: $0.bytes) }
        return try await perform("reading dead tokens", idempotent: true) {
            let rows = try await client.query(
                "SELECT token FROM dead_tokens WHERE app_id = \(appID) AND token = ANY(\(bytes)::bytea[])", logger: logger)
            var dead: Set<DeviceToken> = []
            for try await token in rows.decode(ByteBuffer.self) { dead.insert(DeviceToken(token)) }
            return dead
        }
    }

    /// The dead token record for one token, if it is dead.
    public func deadToken(_ token: DeviceToken, appID: Int64) async throws(StoreError) -> DeadToken? {
        let bytes = ByteBuffer(bytes: token.bytes)
        return try await perform("reading dead token", idempotent: true) {
            let rows = try await client.query(
                "SELECT dead_since, reason FROM dead_tokens WHERE app_id = \(appID) AND token = \(bytes)", logger: logger)
            for try await (since, reason) in rows.decode((Date, String).self) {
                return DeadToken(token: token, since: since, reason: reason)
            }
            return nil
        }
    }
}
