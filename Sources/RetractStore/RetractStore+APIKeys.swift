import Foundation
import NIOCore
import PostgresNIO
import RetractModel

/// An API key as the ledger keeps it: its hash, never the key.
package struct APIKeyRecord: Hashable, Sendable {
    package enum Scope: String, Hashable, Sendable, CaseIterable, Codable {
        case admin, record, send, retract, read, client, approve
    }

    package var id: UUID
    package var name: String
    /// SHA-256 of the key.
    package var keyHash: [UInt8]
    package var scopes: Set<Scope>
    /// The apps the key may touch; empty for an admin key that touches all.
    package var appIDs: Set<Int64>
    package var createdBy: String
    package var createdAt: Date?
    package var revokedAt: Date?

    package init(
        id: UUID = UUID(), name: String, keyHash: [UInt8], scopes: Set<Scope>, appIDs: Set<Int64>, createdBy: String,
        createdAt: Date? = nil, revokedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.keyHash = keyHash
        self.scopes = scopes
        self.appIDs = appIDs
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

extension RetractStore {
    /// Stores a key's hash, scopes and apps, and audits it.
    package func createAPIKey(_ key: APIKeyRecord) async throws(StoreError) {
        guard key.keyHash.count == 32 else { throw StoreError(.invalidInput, "keyHash: \(key.keyHash.count) bytes; a SHA-256 has 32") }
        guard !key.scopes.isEmpty else { throw StoreError(.invalidInput, "scopes: at least one scope") }
        guard !key.appIDs.isEmpty || key.scopes == [.admin] else {
            throw StoreError(.invalidInput, "apps: a key that is not admin-only must name the apps it may touch")
        }
        let scopes = key.scopes.map(\.rawValue).sorted()
        let apps = key.appIDs.sorted()
        let hash = ByteBuffer(bytes: key.keyHash)
        do {
            try await perform("creating API key \(key.name)", idempotent: false) { [self] in
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.query(
                        """
                        INSERT INTO api_keys (id, name, key_hash, scopes, created_by)
                        VALUES (\(key.id), \(key.name), \(hash), \(scopes)::text[], \(key.createdBy))
                        """,
                        logger: logger
                    )
                    try await connection.query(
                        "INSERT INTO api_key_apps (key_id, app_id) SELECT \(key.id), unnest(\(apps)::bigint[])", logger: logger)
                    try await Self.audit(
                        AuditEntry(
                            actor: key.createdBy, action: "key.created", subject: key.id.uuidString.lowercased(),
                            details: [
                                "name": key.name, "scopes": scopes.joined(separator: ","),
                                "apps": apps.map(String.init).joined(separator: ","),
                            ]),
                        on: connection, logger: logger)
                }
            }
        } catch let error where error.code == .foreignKeyViolation {
            throw StoreError(.notFound, "apps: one of \(apps) does not exist")
        }
    }

    /// The key with this hash, revoked or not.
    package func apiKey(hash: [UInt8]) async throws(StoreError) -> APIKeyRecord? {
        let buffer = ByteBuffer(bytes: hash)
        return try await perform("reading an API key", idempotent: true) { [self] in
            try await Self.apiKeys(from: client.query(Self.apiKeyQuery(where: "k.key_hash = \(buffer)"), logger: logger)).first
        }
    }

    /// The key with `id`, revoked or not.
    package func apiKey(id: UUID) async throws(StoreError) -> APIKeyRecord? {
        try await perform("reading an API key", idempotent: true) { [self] in
            try await Self.apiKeys(from: client.query(Self.apiKeyQuery(where: "k.id = \(id)"), logger: logger)).first
        }
    }

    /// Every key, revoked or not, oldest first.
    package func apiKeys() async throws(StoreError) -> [APIKeyRecord] {
        try await perform("listing API keys", idempotent: true) { [self] in
            try await Self.apiKeys(from: client.query(Self.apiKeyQuery(where: "true"), logger: logger))
        }
    }

    private static func apiKeyQuery(where condition: PostgresQuery) -> PostgresQuery {
        // The condition's binds come first, so its placeholders keep their numbers.
        PostgresQuery(
            unsafeSQL: """
                SELECT k.id, k.name, k.key_hash, k.scopes, k.created_by, k.created_at, k.revoked_at,
                       coalesce(array_agg(a.app_id ORDER BY a.app_id) FILTER (WHERE a.app_id IS NOT NULL), '{}')
                FROM api_keys k LEFT JOIN api_key_apps a ON a.key_id = k.id
                WHERE \(condition.sql)
                GROUP BY k.id
                ORDER BY k.created_at, k.id
                """,
            binds: condition.binds)
    }

    private static func apiKeys(from rows: PostgresRowSequence) async throws -> [APIKeyRecord] {
        var keys: [APIKeyRecord] = []
        for try await (id, name, hash, scopes, createdBy, createdAt, revokedAt, apps) in rows.decode(
            (UUID, String, ByteBuffer, [String], String, Date, Date?, [Int64]).self)
        {
            keys.append(
                APIKeyRecord(
                    id: id, name: name, keyHash: Array(hash.readableBytesView), scopes: Set(scopes.compactMap(APIKeyRecord.Scope.init)),
                    appIDs: Set(apps), createdBy: createdBy, createdAt: createdAt, revokedAt: revokedAt))
        }
        return keys
    }

    /// Revokes a key; it authenticates nothing from then on.
    ///
    /// - Returns: false when no unrevoked key has that id.
    @discardableResult
    package func revokeAPIKey(id: UUID, actor: String) async throws(StoreError) -> Bool {
        try await perform("revoking API key \(id)", idempotent: true) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let revoked = try await connection.rows(
                    "UPDATE api_keys SET revoked_at = now() WHERE id = \(id) AND revoked_at IS NULL RETURNING id", logger: logger
                ).values(of: UUID.self)
                guard !revoked.isEmpty else { return false }
                try await Self.audit(
                    AuditEntry(actor: actor, action: "key.revoked", subject: id.uuidString.lowercased()), on: connection, logger: logger)
                return true
            }
        }
    }
}
