import Foundation
import Logging
import NIOCore
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// Marks tokens dead for an app. A token marked again keeps the latest
    /// death: it may have come back (a newer delivery) and died again.
    package func markDead(_ tokens: [DeadToken], appID: Int64) async throws(StoreError) {
        guard !tokens.isEmpty else { return }
        try await perform("marking \(tokens.count) tokens dead", idempotent: true) { [self] in
            try await client.withConnection { connection in
                try await Self.markDead(tokens, appID: appID, on: connection, logger: logger)
            }
        }
    }

    static func markDead(_ tokens: [DeadToken], appID: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        // One row per token in a statement: ON CONFLICT cannot touch a row twice.
        var latest: [DeviceToken: DeadToken] = [:]
        for token in tokens where latest[token.token].map({ token.learnedAt > $0.learnedAt }) ?? true {
            latest[token.token] = token
        }
        let rows = Array(latest.values)
        let bytes = rows.map { ByteBuffer(bytes: $0.token.bytes) }
        let since = rows.map(\.since)
        let reasons = rows.map(\.reason)
        let learned = rows.map(\.learnedAt)
        try await connection.query(
            """
            INSERT INTO dead_tokens (app_id, token, dead_since, reason, recorded_at)
            SELECT \(appID), t, s, r, l
            FROM unnest(\(bytes)::bytea[], \(since)::timestamptz[], \(reasons)::text[], \(learned)::timestamptz[]) AS u (t, s, r, l)
            ON CONFLICT (app_id, token) DO UPDATE
            SET dead_since = excluded.dead_since, reason = excluded.reason, recorded_at = excluded.recorded_at
            WHERE excluded.recorded_at > dead_tokens.recorded_at
            """,
            logger: logger
        )
    }

    /// The dead token record for one token, if it is dead.
    package func deadToken(_ token: DeviceToken, appID: Int64) async throws(StoreError) -> DeadToken? {
        let bytes = ByteBuffer(bytes: token.bytes)
        return try await perform("reading dead token", idempotent: true) { [self] in
            let rows = try await client.query(
                "SELECT dead_since, reason, recorded_at FROM dead_tokens WHERE app_id = \(appID) AND token = \(bytes)", logger: logger)
            for try await (since, reason, learnedAt) in rows.decode((Date, String, Date).self) {
                return DeadToken(token: token, since: since, reason: reason, learnedAt: learnedAt)
            }
            return nil
        }
    }
}
