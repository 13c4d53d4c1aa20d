import Foundation
import NIOCore
import PostgresNIO

/// What the ledger says of a request that carries an idempotency key.
public enum IdempotencyClaim: Hashable, Sendable {
    /// The key is new (or its record expired): the caller runs the request,
    /// then keeps its answer with ``RetractStore/keepIdempotentAnswer(key:apiKeyID:status:body:)``
    /// or lets the key go with ``RetractStore/releaseIdempotencyKey(_:apiKeyID:)``.
    case claimed
    /// The same request ran before: its answer.
    case replay(status: Int, body: [UInt8])
    /// The key was used for a different request.
    case conflict
    /// The first request with the key is still running.
    case inProgress
}

extension RetractStore {
    /// How long an answer is kept for replay.
    public static let idempotencyWindow: Duration = .seconds(24 * 60 * 60)

    /// Claims `key` for a request whose method, path and body hash to
    /// `requestHash`, or says what became of an earlier request with it. A
    /// claim left unanswered for a minute (its process died) is taken over.
    public func claimIdempotencyKey(_ key: String, apiKeyID: UUID, requestHash: [UInt8]) async throws(StoreError) -> IdempotencyClaim {
        let hash = ByteBuffer(bytes: requestHash)
        // Not idempotent itself: a claim that happened unseen reads as in progress for a minute.
        return try await perform("claiming idempotency key", idempotent: false) {
            let claimed = try await client.query(
                """
                INSERT INTO idempotency_records (api_key_id, key, request_hash) VALUES (\(apiKeyID), \(key), \(hash))
                ON CONFLICT (api_key_id, key) DO UPDATE
                SET request_hash = excluded.request_hash, status = NULL, body = NULL, created_at = now()
                WHERE (idempotency_records.status IS NULL AND idempotency_records.created_at < now() - interval '1 minute')
                   OR idempotency_records.created_at < now() - interval '24 hours'
                RETURNING 1
                """,
                logger: logger
            ).values(of: Int.self)
            if !claimed.isEmpty { return .claimed }
            let rows = try await client.query(
                "SELECT request_hash, status, body FROM idempotency_records WHERE api_key_id = \(apiKeyID) AND key = \(key)",
                logger: logger)
            for try await (storedHash, status, body) in rows.decode((ByteBuffer, Int?, ByteBuffer?).self) {
                guard storedHash == hash else { return .conflict }
                guard let status else { return .inProgress }
                return .replay(status: status, body: body.map { Array($0.readableBytesView) } ?? [])
            }
            // Released between the two statements: the caller may try again.
            return .inProgress
        }
    }

    /// Keeps the answer to a claimed request, for replay.
    public func keepIdempotentAnswer(key: String, apiKeyID: UUID, status: Int, body: [UInt8]) async throws(StoreError) {
        let buffer = ByteBuffer(bytes: body)
        try await perform("keeping an idempotent answer", idempotent: true) {
            try await client.query(
                "UPDATE idempotency_records SET status = \(status), body = \(buffer) WHERE api_key_id = \(apiKeyID) AND key = \(key)",
                logger: logger)
        }
    }

    /// Lets a claimed key go, when its request failed: it may be used again.
    public func releaseIdempotencyKey(_ key: String, apiKeyID: UUID) async throws(StoreError) {
        try await perform("releasing idempotency key", idempotent: true) {
            try await client.query(
                "DELETE FROM idempotency_records WHERE api_key_id = \(apiKeyID) AND key = \(key) AND status IS NULL", logger: logger)
        }
    }

    /// Drops idempotency records older than the window.
    @discardableResult
    public func dropExpiredIdempotencyRecords() async throws(StoreError) -> Int {
        try await perform("dropping expired idempotency records", idempotent: true) {
            try await client.query(
                """
                WITH dropped AS (DELETE FROM idempotency_records WHERE created_at < now() - interval '24 hours' RETURNING 1)
                SELECT count(*) FROM dropped
                """,
                logger: logger
            ).values(of: Int.self).first ?? 0
        }
    }
}
