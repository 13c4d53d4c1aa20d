import Foundation
import NIOCore
import PostgresNIO
import RetractModel

/// A console sign-in as the ledger keeps it: the key it was made with,
/// read again on every request, and the token its forms carry.
package struct ConsoleSession: Sendable {
    package var key: APIKeyRecord
    package var formToken: String
    package var expiresAt: Date
}

extension RetractStore {
    /// Keeps a sign-in: the SHA-256 of its session id, the key's id and the
    /// form token, until `expiresAt`.
    package func createConsoleSession(idHash: [UInt8], keyID: UUID, formToken: String, expiresAt: Date) async throws(StoreError) {
        guard idHash.count == 32 else { throw StoreError(.invalidInput, "idHash: \(idHash.count) bytes; a SHA-256 has 32") }
        let hash = ByteBuffer(bytes: idHash)
        try await perform("keeping a console session", idempotent: false) { [self] in
            try await client.query(
                """
                INSERT INTO console_sessions (id_hash, key_id, form_token, expires_at)
                VALUES (\(hash), \(keyID), \(formToken), \(expiresAt))
                """,
                logger: logger
            )
        }
    }

    /// The unexpired session whose id hashes to `idHash`, with its key as it
    /// is now (revoked or not: the caller decides); nil when there is none.
    package func consoleSession(idHash: [UInt8]) async throws(StoreError) -> ConsoleSession? {
        let hash = ByteBuffer(bytes: idHash)
        let found = try await perform("reading a console session", idempotent: true) { [self] () -> (UUID, String, Date)? in
            let rows = try await client.query(
                "SELECT key_id, form_token, expires_at FROM console_sessions WHERE id_hash = \(hash) AND expires_at > now()",
                logger: logger)
            for try await row in rows.decode((UUID, String, Date).self) { return row }
            return nil
        }
        guard let (keyID, formToken, expiresAt) = found, let key = try await apiKey(id: keyID) else { return nil }
        return ConsoleSession(key: key, formToken: formToken, expiresAt: expiresAt)
    }

    /// Of the sessions whose ids hash to `idHashes`, those still signed in:
    /// unexpired, and their key not revoked. One read for every live stream
    /// the console holds open.
    package func liveConsoleSessions(idHashes: Set<[UInt8]>) async throws(StoreError) -> Set<[UInt8]> {
        guard !idHashes.isEmpty else { return [] }
        let hashes = idHashes.map { ByteBuffer(bytes: $0) }
        return try await perform("checking console sessions", idempotent: true) { [self] in
            let rows = try await client.query(
                """
                SELECT s.id_hash FROM console_sessions s JOIN api_keys k ON k.id = s.key_id
                WHERE s.id_hash = ANY(\(hashes)::bytea[]) AND s.expires_at > now() AND k.revoked_at IS NULL
                """,
                logger: logger)
            var live: Set<[UInt8]> = []
            for try await hash in rows.decode(ByteBuffer.self) { live.insert(Array(hash.readableBytesView)) }
            return live
        }
    }

    /// Ends a sign-in. Ending one that does not exist is not an error.
    package func deleteConsoleSession(idHash: [UInt8]) async throws(StoreError) {
        let hash = ByteBuffer(bytes: idHash)
        try await perform("ending a console session", idempotent: true) { [self] in
            try await client.query("DELETE FROM console_sessions WHERE id_hash = \(hash)", logger: logger)
        }
    }

    /// Deletes sessions that expired; returns how many.
    @discardableResult
    package func deleteExpiredConsoleSessions() async throws(StoreError) -> Int {
        try await perform("deleting expired console sessions", idempotent: true) { [self] in
            let rows = try await client.query(
                "WITH gone AS (DELETE FROM console_sessions WHERE expires_at <= now() RETURNING 1) SELECT count(*)::bigint FROM gone",
                logger: logger)
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }
}
