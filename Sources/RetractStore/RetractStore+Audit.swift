import Foundation
import Logging
import PostgresNIO

/// One line of the audit log: who did what, to which app.
package struct AuditEntry: Hashable, Sendable {
    package var at: Date?
    package var actor: String
    /// `retraction.created`, `app.registered`, `key.created`, `key.revoked`.
    package var action: String
    package var appID: Int64?
    /// What the action was about: a retraction's or a key's id, an app's name.
    package var subject: String?
    package var details: [String: String]

    package init(
        actor: String, action: String, appID: Int64? = nil, subject: String? = nil, details: [String: String] = [:], at: Date? = nil
    ) {
        self.actor = actor
        self.action = action
        self.appID = appID
        self.subject = subject
        self.details = details
        self.at = at
    }
}

extension RetractStore {
    /// The audit log, newest first; of one app when `appID` is given.
    package func auditLog(appID: Int64? = nil, limit: Int = 100) async throws(StoreError) -> [AuditEntry] {
        try await perform("reading the audit log", idempotent: true) { [self] in
            let rows = try await client.query(
                """
                SELECT at, actor, action, app_id, subject, details::text FROM audit_log
                WHERE \(appID)::bigint IS NULL OR app_id = \(appID)
                ORDER BY at DESC, id DESC LIMIT \(limit)
                """,
                logger: logger
            )
            var entries: [AuditEntry] = []
            for try await (at, actor, action, appID, subject, details) in rows.decode((Date, String, String, Int64?, String?, String).self)
            {
                let decoded = (try? JSONDecoder().decode([String: String].self, from: Data(details.utf8))) ?? [:]
                entries.append(AuditEntry(actor: actor, action: action, appID: appID, subject: subject, details: decoded, at: at))
            }
            return entries
        }
    }

    /// Writes an entry inside the caller's transaction, so the entry exists
    /// exactly when what it records does.
    static func audit(_ entry: AuditEntry, on connection: PostgresConnection, logger: Logger) async throws {
        let details = String(decoding: try JSONEncoder().encode(entry.details), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO audit_log (actor, action, app_id, subject, details)
            VALUES (\(entry.actor), \(entry.action), \(entry.appID), \(entry.subject), \(details)::jsonb)
            """,
            logger: logger
        )
    }
}
