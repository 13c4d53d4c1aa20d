import Foundation
import NIOCore
import PostgresNIO
import RetractModel

/// What the ledger says of a request that carries an idempotency key.
package enum IdempotencyClaim: Hashable, Sendable {
    /// The key is this request's under `claim` (new, or its earlier holder
    /// died or stopped part-way): run the request, keep its claim alive with
    /// ``RetractStore/extendIdempotencyClaim(key:apiKeyID:claim:)``, then
    /// keep its answer, or release the key. `partial` is what an earlier run
    /// of the same request kept of the work it had done when it stopped
    /// (``RetractStore/keepPartialWork(key:apiKeyID:claim:partial:)``).
    case claimed(UUID, partial: [UInt8]?)
    /// The same request ran before: its answer.
    case replay(IdempotentAnswer)
    /// The key was used for a different request.
    case conflict
    /// The first request with the key is still running.
    case inProgress
}

/// An answer kept for replay.
package struct IdempotentAnswer: Hashable, Sendable {
    package var status: Int
    package var body: [UInt8]
    /// The `Location` header, when the answer had one.
    package var location: String?

    package init(status: Int, body: [UInt8], location: String? = nil) {
        self.status = status
        self.body = body
        self.location = location
    }
}

extension RetractStore {
    /// Claims `key` for a request whose method, path and body hash to
    /// `requestHash`, or says what became of an earlier request with it. A
    /// claim not extended for a minute (its server died) is taken over; one
    /// that kept partial work, only by the same request.
    package func claimIdempotencyKey(_ key: String, apiKeyID: UUID, requestHash: [UInt8]) async throws(StoreError) -> IdempotencyClaim {
        let hash = ByteBuffer(bytes: requestHash)
        let claim = UUID()
        // Not idempotent itself: a claim that happened unseen reads as in progress for a minute.
        return try await perform("claiming idempotency key", idempotent: false) { [self] in
            // Twice at most: a key released between the two statements is free again.
            for _ in 0..<2 {
                let claimed = try await client.query(
                    """
                    INSERT INTO idempotency_records (api_key_id, key, request_hash, claim) VALUES (\(apiKeyID), \(key), \(hash), \(claim))
                    ON CONFLICT (api_key_id, key) DO UPDATE
                    SET request_hash = excluded.request_hash, claim = excluded.claim, status = NULL, body = NULL, location = NULL,
                        claimed_at = now(),
                        partial = CASE WHEN idempotency_records.created_at >= now() - interval '24 hours' THEN idempotency_records.partial END,
                        created_at = CASE WHEN idempotency_records.created_at >= now() - interval '24 hours'
                                          THEN idempotency_records.created_at ELSE now() END
                    WHERE (idempotency_records.status IS NULL AND idempotency_records.claimed_at < now() - interval '1 minute'
                           AND (idempotency_records.partial IS NULL OR idempotency_records.request_hash = excluded.request_hash))
                       OR idempotency_records.created_at < now() - interval '24 hours'
                    RETURNING partial
                    """,
                    logger: logger
                )
                for try await partial in claimed.decode(ByteBuffer?.self) {
                    return .claimed(claim, partial: partial.map { Array($0.readableBytesView) })
                }
                let rows = try await client.query(
                    "SELECT request_hash, status, body, location FROM idempotency_records WHERE api_key_id = \(apiKeyID) AND key = \(key)",
                    logger: logger)
                for try await (storedHash, status, body, location) in rows.decode((ByteBuffer, Int?, ByteBuffer?, String?).self) {
                    guard storedHash == hash else { return .conflict }
                    guard let status else { return .inProgress }
                    return .replay(
                        IdempotentAnswer(status: status, body: body.map { Array($0.readableBytesView) } ?? [], location: location))
                }
            }
            return .inProgress
        }
    }

    /// Tells other servers the claim's request is still running.
    ///
    /// - Returns: false when the claim is no longer this request's.
    @discardableResult
    package func extendIdempotencyClaim(key: String, apiKeyID: UUID, claim: UUID) async throws(StoreError) -> Bool {
        try await perform("extending an idempotency claim", idempotent: true) { [self] in
            !(try await client.query(
                """
                UPDATE idempotency_records SET claimed_at = now()
                WHERE api_key_id = \(apiKeyID) AND key = \(key) AND claim = \(claim) AND status IS NULL
                RETURNING 1
                """,
                logger: logger
            ).values(of: Int.self).isEmpty)
        }
    }

    /// Keeps the answer to a claimed request, for replay; a claim taken over
    /// meanwhile is left alone.
    package func keepIdempotentAnswer(key: String, apiKeyID: UUID, claim: UUID, answer: IdempotentAnswer) async throws(StoreError) {
        let buffer = ByteBuffer(bytes: answer.body)
        try await perform("keeping an idempotent answer", idempotent: true) { [self] in
            try await client.query(
                """
                UPDATE idempotency_records SET status = \(answer.status), body = \(buffer), location = \(answer.location)
                WHERE api_key_id = \(apiKeyID) AND key = \(key) AND claim = \(claim)
                """,
                logger: logger)
        }
    }

    /// Keeps what a claimed request had done when it stopped on an error, and
    /// lets the next request with the same key and body take the claim at once
    /// and resume from it (a request with another body gets a conflict).
    package func keepPartialWork(key: String, apiKeyID: UUID, claim: UUID, partial: [UInt8]) async throws(StoreError) {
        let buffer = ByteBuffer(bytes: partial)
        try await perform("keeping partial work for an idempotency key", idempotent: true) { [self] in
            try await client.query(
                """
                UPDATE idempotency_records SET partial = \(buffer), claimed_at = now() - interval '1 hour'
                WHERE api_key_id = \(apiKeyID) AND key = \(key) AND claim = \(claim) AND status IS NULL
                """,
                logger: logger)
        }
    }

    /// Lets a claimed key go, when its request failed: it may be used again.
    /// Partial work an earlier run kept stays with the key, for the next run.
    package func releaseIdempotencyKey(_ key: String, apiKeyID: UUID, claim: UUID) async throws(StoreError) {
        try await perform("releasing idempotency key", idempotent: true) { [self] in
            try await client.query(
                """
                WITH mine AS (
                    SELECT api_key_id, key, partial IS NOT NULL AS keeps FROM idempotency_records
                    WHERE api_key_id = \(apiKeyID) AND key = \(key) AND claim = \(claim) AND status IS NULL
                ),
                dropped AS (
                    DELETE FROM idempotency_records r USING mine
                    WHERE r.api_key_id = mine.api_key_id AND r.key = mine.key AND NOT mine.keeps
                )
                UPDATE idempotency_records r SET claimed_at = now() - interval '1 hour'
                FROM mine WHERE r.api_key_id = mine.api_key_id AND r.key = mine.key AND mine.keeps
                """,
                logger: logger)
        }
    }

    /// Drops idempotency records older than the window.
    @discardableResult
    package func dropExpiredIdempotencyRecords() async throws(StoreError) -> Int {
        try await perform("dropping expired idempotency records", idempotent: true) { [self] in
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
