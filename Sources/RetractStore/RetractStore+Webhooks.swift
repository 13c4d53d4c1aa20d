import Foundation
import Logging
import PostgresNIO
import RetractModel

extension RetractStore {
    /// Sets or replaces the webhook of an app, audit-logged (its URL, never
    /// its secret) in the same transaction.
    package func setWebhook(appID: Int64, url: String, secret: String, actor: String) async throws(StoreError) -> AppWebhook {
        try await perform("setting the webhook of app \(appID)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO app_webhooks (app_id, url, secret) VALUES (\(appID), \(url), \(secret))
                    ON CONFLICT (app_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, updated_at = now()
                    RETURNING \(unescaped: Self.webhookColumns)
                    """,
                    logger: logger)
                guard let webhook = try await Self.webhooks(from: rows).first else {
                    throw StoreError(.database, "setting the webhook of app \(appID): no row came back")
                }
                let name = try await connection.rows("SELECT name FROM apps WHERE id = \(appID)", logger: logger).values(of: String.self)
                try await Self.audit(
                    AuditEntry(actor: actor, action: "webhook.set", appID: appID, subject: name.first, details: ["url": url]),
                    on: connection, logger: logger)
                return webhook
            }
        }
    }

    /// Removes the webhook of an app, audit-logged; deliveries not made yet
    /// are given up when they come due.
    ///
    /// - Returns: false when the app had none.
    package func removeWebhook(appID: Int64, actor: String) async throws(StoreError) -> Bool {
        try await perform("removing the webhook of app \(appID)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let removed = try await connection.rows(
                    "DELETE FROM app_webhooks WHERE app_id = \(appID) RETURNING url", logger: logger
                ).values(of: String.self)
                guard let url = removed.first else { return false }
                let name = try await connection.rows("SELECT name FROM apps WHERE id = \(appID)", logger: logger).values(of: String.self)
                try await Self.audit(
                    AuditEntry(actor: actor, action: "webhook.removed", appID: appID, subject: name.first, details: ["url": url]),
                    on: connection, logger: logger)
                return true
            }
        }
    }

    /// The webhook of an app, if it has one.
    /// How many apps have a completion webhook.
    package func webhookCount() async throws(StoreError) -> Int {
        try await perform("counting webhooks", idempotent: true) { [self] in
            let rows = try await client.query("SELECT count(*)::bigint FROM app_webhooks", logger: logger)
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }

    package func webhook(appID: Int64) async throws(StoreError) -> AppWebhook? {
        try await perform("reading the webhook of app \(appID)", idempotent: true) { [self] in
            try await Self.webhooks(
                from: client.query("SELECT \(unescaped: Self.webhookColumns) FROM app_webhooks WHERE app_id = \(appID)", logger: logger)
            ).first
        }
    }

    /// The completion webhook of a retraction, if one was queued.
    package func webhookDelivery(retractionID: UUID, mayLag: Bool = false) async throws(StoreError) -> WebhookDelivery? {
        try await performReplicaRead("reading the webhook delivery of retraction \(retractionID)", mayLag: mayLag) { [logger] client in
            let rows = try await client.query(
                """
                SELECT id, retraction_id, app_id, url, attempts, last_status, last_error,
                       created_at, first_attempt_at, delivered_at, gave_up_at,
                       CASE WHEN delivered_at IS NULL AND gave_up_at IS NULL AND claim IS NULL THEN run_after END
                FROM webhook_deliveries WHERE retraction_id = \(retractionID)
                """,
                logger: logger)
            for try await row in rows {
                var columns = ColumnReader(row)
                let (id, retraction, app, url, attempts, status, error) = try columns.next(
                    (UUID, UUID, Int64, String, Int, Int?, String?).self)
                let (created, first, delivered, gaveUp, next) = try columns.next((Date, Date?, Date?, Date?, Date?).self)
                return WebhookDelivery(
                    id: id, retractionID: retraction, appID: app, url: url, attempts: attempts, lastStatus: status, lastError: error,
                    createdAt: created, firstAttemptAt: first, deliveredAt: delivered, gaveUpAt: gaveUp, nextAttemptAt: next)
            }
            return nil
        }
    }

    /// Claims up to `limit` due deliveries for `worker`, with `FOR UPDATE
    /// SKIP LOCKED`; each claim counts as an attempt and holds the delivery
    /// for `lease`, after which another worker may take it.
    package func claimWebhookDeliveries(worker: String, limit: Int, lease: Duration) async throws(StoreError) -> [ClaimedWebhookDelivery] {
        let claim = UUID()
        let leaseMilliseconds = lease.milliseconds
        return try await perform("claiming webhook deliveries", idempotent: false) { [self] in
            let rows = try await client.query(
                """
                WITH due AS (
                    SELECT id FROM webhook_deliveries
                    WHERE delivered_at IS NULL AND gave_up_at IS NULL AND run_after <= now()
                    ORDER BY run_after, id
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE webhook_deliveries d
                SET claim = \(claim), claimed_by = \(worker), attempts = d.attempts + 1,
                    first_attempt_at = coalesce(d.first_attempt_at, now()),
                    run_after = now() + \(leaseMilliseconds) * interval '1 millisecond'
                FROM due WHERE d.id = due.id
                RETURNING d.id, d.retraction_id, d.app_id, d.attempts, d.first_attempt_at,
                          (SELECT w.url FROM app_webhooks w WHERE w.app_id = d.app_id),
                          (SELECT w.secret FROM app_webhooks w WHERE w.app_id = d.app_id)
                """,
                logger: logger)
            var claimed: [ClaimedWebhookDelivery] = []
            for try await (id, retraction, app, attempts, first, url, secret) in rows.decode(
                (UUID, UUID, Int64, Int, Date, String?, String?).self)
            {
                let webhook = url.flatMap { url in secret.map { (url, $0) } }
                claimed.append(
                    ClaimedWebhookDelivery(
                        id: id, retractionID: retraction, appID: app, attempts: attempts, firstAttemptAt: first, claim: claim,
                        webhook: webhook))
            }
            return claimed
        }
    }

    /// Records how an attempt ended and lets the delivery go.
    ///
    /// - Returns: false when the claim had lapsed (another worker has it); nothing changed then.
    @discardableResult
    package func finishWebhookDelivery(_ delivery: ClaimedWebhookDelivery, _ outcome: WebhookOutcome) async throws(StoreError) -> Bool {
        let (url, status, error, delay, delivered, gaveUp): (String?, Int?, String?, Int64, Bool, Bool) =
            switch outcome {
            case .delivered(let url, let status): (url, status, nil, 0, true, false)
            case .retry(let url, let status, let error, let delay): (url, status, error, max(delay.milliseconds, 0), false, false)
            case .gaveUp(let url, let status, let error): (url, status, error, 0, false, true)
            }
        return try await perform("finishing webhook delivery \(delivery.id)", idempotent: true) { [self] in
            !(try await client.query(
                """
                UPDATE webhook_deliveries
                SET claim = NULL, claimed_by = NULL, url = coalesce(\(url), url), last_status = \(status), last_error = \(error),
                    run_after = clock_timestamp() + \(delay) * interval '1 millisecond',
                    delivered_at = CASE WHEN \(delivered) THEN now() END, gave_up_at = CASE WHEN \(gaveUp) THEN now() END
                WHERE id = \(delivery.id) AND claim = \(delivery.claim)
                RETURNING id
                """,
                logger: logger
            ).values(of: UUID.self).isEmpty)
        }
    }

    private static let webhookColumns = "app_id, url, secret, created_at, updated_at"

    private static func webhooks(from rows: PostgresRowSequence) async throws -> [AppWebhook] {
        var webhooks: [AppWebhook] = []
        for try await (appID, url, secret, created, updated) in rows.decode((Int64, String, String, Date, Date).self) {
            webhooks.append(AppWebhook(appID: appID, url: url, secret: secret, createdAt: created, updatedAt: updated))
        }
        return webhooks
    }
}
