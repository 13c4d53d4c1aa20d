import Foundation
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// Registers an app; a name already taken is ``StoreError/Code/uniqueViolation``.
    package func registerApp(_ registration: AppRegistration, actor: String) async throws(StoreError) -> App {
        if let problem = registration.problem { throw StoreError(.invalidInput, "app: \(problem)") }
        let (keyID, teamID, keyPath, certificatePath): (String?, String?, String?, String?) =
            switch registration.authentication {
            case .token(let keyID, let teamID, let keyPath): (keyID, teamID, keyPath, nil)
            case .certificate(let path): (nil, nil, nil, path)
            case .fcmOnly: (nil, nil, nil, nil)
            }
        let authKind =
            switch registration.authentication {
            case .token: "token"
            case .certificate: "certificate"
            case .fcmOnly: "none"
            }
        return try await perform("registering app \(registration.name)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO apps (name, topic, environment, endpoint, dialect, auth_kind, key_id, team_id, key_path, certificate_path,
                                      fcm_service_account_path, retraction_mode, retraction_text)
                    VALUES (\(registration.name), \(registration.topic), \(registration.environment.rawValue), \(registration.endpoint),
                            \(registration.dialect.rawValue), \(authKind), \(keyID), \(teamID), \(keyPath), \(certificatePath),
                            \(registration.fcmServiceAccountPath), \(registration.retractionMode.rawValue), \(registration.retractionText))
                    RETURNING \(unescaped: Self.appColumns)
                    """,
                    logger: logger
                )
                guard let app = try await Self.apps(from: rows).first else {
                    throw StoreError(.database, "registering app \(registration.name): no row came back")
                }
                try await Self.audit(
                    AuditEntry(
                        actor: actor, action: "app.registered", appID: app.id, subject: app.name, details: registration.auditDetails),
                    on: connection, logger: logger)
                return app
            }
        }
    }

    package func app(named name: String) async throws(StoreError) -> App? {
        if let known = appsByName.withLockedValue({ $0[name] }) { return known }
        let found = try await perform("reading app \(name)", idempotent: true) { [self] in
            try await Self.apps(
                from: client.query("SELECT \(unescaped: Self.appColumns) FROM apps WHERE name = \(name)", logger: logger)
            ).first
        }
        if let found { appsByName.withLockedValue { if $0.count < 10_000 { $0[name] = found } } }
        return found
    }

    package func app(id: Int64) async throws(StoreError) -> App? {
        try await perform("reading app \(id)", idempotent: true) { [self] in
            try await Self.apps(from: client.query("SELECT \(unescaped: Self.appColumns) FROM apps WHERE id = \(id)", logger: logger)).first
        }
    }

    package func apps() async throws(StoreError) -> [App] {
        try await perform("listing apps", idempotent: true) { [self] in
            try await Self.apps(from: client.query("SELECT \(unescaped: Self.appColumns) FROM apps ORDER BY name", logger: logger))
        }
    }

    /// An app's columns, a line for each group ``apps(from:)`` reads.
    private static let appColumns =
        """
        id, name, topic, environment, endpoint, dialect, auth_kind,
        key_id, team_id, key_path, certificate_path, created_at, fcm_service_account_path, retraction_mode, retraction_text
        """

    private static func apps(from rows: PostgresRowSequence) async throws -> [App] {
        var apps: [App] = []
        for try await row in rows {
            var columns = ColumnReader(row)
            let (id, name, topic, environment, endpoint, dialect, authKind) = try columns.next(
                (Int64, String, String, String, String?, String, String).self)
            let (keyID, teamID, keyPath, certificatePath, createdAt, fcmServiceAccountPath, mode, text) = try columns.next(
                (String?, String?, String?, String?, Date, String?, String, String).self)
            let authentication: App.Authentication =
                switch authKind {
                case "certificate": .certificate(path: certificatePath ?? "")
                case "none": .fcmOnly
                default: .token(keyID: keyID ?? "", teamID: teamID ?? "", keyPath: keyPath ?? "")
                }
            apps.append(
                App(
                    id: id, name: name, topic: topic,
                    environment: App.Environment(rawValue: environment) ?? .production,
                    endpoint: endpoint,
                    dialect: PayloadDialect(rawValue: dialect) ?? .canonical,
                    authentication: authentication,
                    fcmServiceAccountPath: fcmServiceAccountPath,
                    retractionMode: RetractionMode(rawValue: mode) ?? .background,
                    retractionText: text,
                    createdAt: createdAt
                ))
        }
        return apps
    }
}
