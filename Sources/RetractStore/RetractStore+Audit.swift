import Foundation
import Logging
import PostgresNIO
import RetractKit
import RetractModel

/// One line of the audit log: who did what, to which app.
package struct AuditEntry: Hashable, Sendable {
    /// The row's id; nil for an entry not yet written.
    package var id: Int64?
    package var at: Date?
    package var actor: String
    /// `retraction.created`, `retraction.cancelled`, `app.registered`, `key.created`, `key.revoked`.
    package var action: String
    package var appID: Int64?
    /// The name of the app, for an entry read back.
    package var appName: String?
    /// What the action was about: a retraction's or a key's id, an app's name.
    package var subject: String?
    package var details: [String: String]

    package init(
        actor: String, action: String, appID: Int64? = nil, subject: String? = nil, details: [String: String] = [:], at: Date? = nil,
        id: Int64? = nil, appName: String? = nil
    ) {
        self.actor = actor
        self.action = action
        self.appID = appID
        self.subject = subject
        self.details = details
        self.at = at
        self.id = id
        self.appName = appName
    }

    /// The API key's name when an API caller did it: the server writes its
    /// actor as `api-key:NAME (uuid)`. Nil for the CLI, late deliveries and
    /// the like.
    package var keyName: String? {
        guard actor.hasPrefix(Self.apiKeyPrefix), actor.hasSuffix(")"), let open = actor.range(of: " (", options: .backwards) else {
            return nil
        }
        let name = actor[actor.index(actor.startIndex, offsetBy: Self.apiKeyPrefix.count)..<open.lowerBound]
        let id = actor[open.upperBound..<actor.index(before: actor.endIndex)]
        guard !name.isEmpty, UUID(uuidString: String(id)) != nil else { return nil }
        return String(name)
    }

    /// Why, for a retraction: what its requester gave.
    package var reason: String? { details["reason"] }

    /// How the server names an API key as an actor: `api-key:NAME (id)`,
    /// which ``keyName`` reads back.
    package static func apiKeyActor(name: String, id: UUID) -> String { "\(apiKeyPrefix)\(name) (\(id.uuidString.lowercased()))" }

    private static let apiKeyPrefix = "api-key:"
}

/// Where a page of the audit log ended: after this entry, newest first.
/// Travels as an opaque string (``encoded``).
package struct AuditCursor: Hashable, Sendable {
    /// The entry's time in microseconds since 1970, PostgreSQL's precision.
    package var microseconds: Int64
    package var id: Int64

    package init(microseconds: Int64, id: Int64) {
        self.microseconds = microseconds
        self.id = id
    }

    /// `a1.<microseconds>.<id>`, base64url without padding.
    package var encoded: String { OpaqueCursor.encode(["a1", "\(microseconds)", "\(id)"]) }

    /// Reads a cursor made by ``encoded``.
    /// - Throws: ``StoreError/Code/invalidInput`` saying what is wrong with it.
    package init(encoded: String) throws(StoreError) {
        let parts = try OpaqueCursor.fields(of: encoded, tag: "a1", count: 3, of: "the audit log", maximumLength: 128)
        guard let microseconds = Int64(parts[1]), let id = Int64(parts[2]) else { throw OpaqueCursor.invalid(encoded, of: "the audit log") }
        self.init(microseconds: microseconds, id: id)
    }
}

/// What to read of the audit log.
package struct AuditQuery: Hashable, Sendable {
    /// Only entries of these apps; nil for every entry, those of no app
    /// (`key.created`, `key.revoked`) included.
    package var appIDs: Set<Int64>?
    /// Entries at or after this time.
    package var since: Date?
    /// Entries before this time.
    package var until: Date?
    /// Only this action, such as `retraction.created`.
    package var action: String?
    /// Entries a page holds, 1 to ``maximumLimit``.
    package var limit: Int
    /// Where the previous page ended; nil for the newest entries.
    package var cursor: AuditCursor?

    package init(
        appIDs: Set<Int64>? = nil, since: Date? = nil, until: Date? = nil, action: String? = nil, limit: Int = 100,
        cursor: AuditCursor? = nil
    ) {
        self.appIDs = appIDs
        self.since = since
        self.until = until
        self.action = action
        self.limit = limit
        self.cursor = cursor
    }

    package static let maximumLimit = 500

    /// What is wrong with the query, as (field, problem), or nil.
    package var problem: (field: String, problem: String)? {
        if !(1...Self.maximumLimit).contains(limit) { return ("limit", "\(limit); a page holds 1 to \(Self.maximumLimit) entries") }
        if let since, let until, since >= until { return ("since", "not before until; no entry is in between") }
        if let action, action.isEmpty || action.utf8.count > 64 || action.containsControlCharacters {
            return ("action", "1 to 64 bytes without control characters")
        }
        return nil
    }
}

/// A page of the audit log, newest first, and where the next one starts.
package struct AuditPage: Hashable, Sendable {
    package var entries: [AuditEntry]
    /// Nil on the last page.
    package var next: AuditCursor?

    package init(entries: [AuditEntry], next: AuditCursor?) {
        self.entries = entries
        self.next = next
    }
}

extension RetractStore {
    /// The audit log, newest first; of one app when `appID` is given.
    package func auditLog(appID: Int64? = nil, limit: Int = 100) async throws(StoreError) -> [AuditEntry] {
        try await auditPage(AuditQuery(appIDs: appID.map { [$0] }, limit: min(max(limit, 1), AuditQuery.maximumLimit))).entries
    }

    /// A page of the audit log, newest first (by time, then id). Reads
    /// `audit_log_by_time` or, for a set of apps, `audit_log_by_app` from
    /// the cursor on, so a page costs the same at any depth. On
    /// ``readClient``: a filter that matches few entries may read far.
    package func auditPage(_ query: AuditQuery) async throws(StoreError) -> AuditPage {
        if let (field, problem) = query.problem { throw StoreError(.invalidInput, "\(field): \(problem)") }
        let apps = query.appIDs.map { Array($0) }
        let cursorMicros = query.cursor?.microseconds
        let cursorID = query.cursor?.id
        let sql: PostgresQuery = """
            SELECT l.id, l.at, (extract(epoch FROM l.at) * 1000000)::bigint, l.actor, l.action, l.app_id, a.name, l.subject, l.details::text
            FROM audit_log l LEFT JOIN apps a ON a.id = l.app_id
            WHERE (\(apps)::bigint[] IS NULL OR l.app_id = ANY(\(apps)::bigint[]))
              AND (\(query.since)::timestamptz IS NULL OR l.at >= \(query.since)::timestamptz)
              AND (\(query.until)::timestamptz IS NULL OR l.at < \(query.until)::timestamptz)
              AND (\(query.action)::text IS NULL OR l.action = \(query.action)::text)
              AND (\(cursorMicros)::bigint IS NULL
                   OR (l.at, l.id) < ('epoch'::timestamptz + \(cursorMicros)::bigint * interval '1 microsecond', \(cursorID)::bigint))
            ORDER BY l.at DESC, l.id DESC
            LIMIT \(query.limit + 1)
            """
        return try await performRead("reading the audit log") { [self] in
            var entries: [AuditEntry] = []
            var cursors: [AuditCursor] = []
            let rows = try await readClient.query(sql, logger: logger)
            for try await row in rows {
                let (id, at, micros, actor, action, appID, appName, subject, details) = try row.decode(
                    (Int64, Date, Int64, String, String, Int64?, String?, String?, String).self)
                let decoded = (try? JSONDecoder().decode([String: String].self, from: Data(details.utf8))) ?? [:]
                entries.append(
                    AuditEntry(
                        actor: actor, action: action, appID: appID, subject: subject, details: decoded, at: at, id: id, appName: appName))
                cursors.append(AuditCursor(microseconds: micros, id: id))
            }
            guard entries.count > query.limit else { return AuditPage(entries: entries, next: nil) }
            return AuditPage(entries: Array(entries.prefix(query.limit)), next: cursors[query.limit - 1])
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
