import Foundation
import PostgresNIO
import RetractKit
import RetractModel

extension RetractStore {
    /// Registers an app; a name already taken is ``StoreError/Code/uniqueViolation``.
    package func registerApp(_ registration: AppRegistration, actor: String) async throws(StoreError) -> App {
        if let problem = registration.problem { throw StoreError(.invalidInput, "app: \(problem)") }
        let (authKind, keyID, teamID, keyPath, certificatePath) = Self.authColumns(registration.authentication)
        return try await perform("registering app \(registration.name)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO apps (name, topic, environment, endpoint, dialect, auth_kind, key_id, team_id, key_path, certificate_path,
                                      fcm_service_account_path, retraction_mode, retraction_text, carrier_interruption_level,
                                      approval_threshold, approval_window_minutes)
                    VALUES (\(registration.name), \(registration.topic), \(registration.environment.rawValue), \(registration.endpoint),
                            \(registration.dialect.rawValue), \(authKind), \(keyID), \(teamID), \(keyPath), \(certificatePath),
                            \(registration.fcmServiceAccountPath), \(registration.retractionMode.rawValue), \(registration.retractionText),
                            \(registration.carrierInterruption.rawValue), \(registration.approvalThreshold),
                            \(registration.approvalWindowMinutes))
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
        if let known = appsByName.withLockedValue({ $0[name] }), ContinuousClock.now - known.readAt < Self.appCacheLifetime {
            return known.app
        }
        let found = try await perform("reading app \(name)", idempotent: true) { [self] in
            try await Self.apps(
                from: client.query("SELECT \(unescaped: Self.appColumns) FROM apps WHERE name = \(name)", logger: logger)
            ).first
        }
        if let found { appsByName.withLockedValue { if $0.count < 10_000 || $0[name] != nil { $0[name] = (found, .now) } } }
        return found
    }

    /// Changes app `old` to `new` (``AppChange/applied(to:)`` made it), with
    /// an audit entry (`app.updated`) for each field that changed, in one
    /// transaction. Only while the app is still `old`: when another change
    /// came first, ``StoreError/Code/stateConflict`` and nothing changes.
    package func updateApp(from old: App, to new: App, actor: String) async throws(StoreError) -> App {
        let differences = AppChange.differences(from: old, to: new)
        guard !differences.isEmpty else { return old }
        let (was, will) = (Self.authColumns(old.authentication), Self.authColumns(new.authentication))
        let updated = try await perform("updating app \(old.name)", idempotent: false) { [self] in
            try await client.withTransaction(logger: logger) { connection -> App in
                let rows = try await connection.query(
                    """
                    UPDATE apps SET endpoint = \(new.endpoint), auth_kind = \(will.kind), key_id = \(will.keyID), team_id = \(will.teamID),
                                    key_path = \(will.keyPath), certificate_path = \(will.certificatePath),
                                    fcm_service_account_path = \(new.fcmServiceAccountPath), retraction_mode = \(new.retractionMode.rawValue),
                                    retraction_text = \(new.retractionText),
                                    carrier_interruption_level = \(new.carrierInterruption.rawValue),
                                    approval_threshold = \(new.approvalThreshold),
                                    approval_window_minutes = \(new.approvalWindowMinutes)
                    WHERE id = \(old.id) AND endpoint IS NOT DISTINCT FROM \(old.endpoint) AND auth_kind = \(was.kind)
                      AND key_id IS NOT DISTINCT FROM \(was.keyID) AND team_id IS NOT DISTINCT FROM \(was.teamID)
                      AND key_path IS NOT DISTINCT FROM \(was.keyPath) AND certificate_path IS NOT DISTINCT FROM \(was.certificatePath)
                      AND fcm_service_account_path IS NOT DISTINCT FROM \(old.fcmServiceAccountPath)
                      AND retraction_mode = \(old.retractionMode.rawValue) AND retraction_text = \(old.retractionText)
                      AND carrier_interruption_level = \(old.carrierInterruption.rawValue)
                      AND approval_threshold IS NOT DISTINCT FROM \(old.approvalThreshold)
                      AND approval_window_minutes = \(old.approvalWindowMinutes)
                    RETURNING \(unescaped: Self.appColumns)
                    """,
                    logger: logger)
                guard let app = try await Self.apps(from: rows).first else {
                    throw StoreError(.stateConflict, "app \(old.name) was changed or removed meanwhile; read it again and retry")
                }
                for (field, from, to) in differences {
                    var details = ["field": field]
                    details["from"] = from
                    details["to"] = to
                    try await Self.audit(
                        AuditEntry(actor: actor, action: "app.updated", appID: app.id, subject: app.name, details: details),
                        on: connection, logger: logger)
                }
                return app
            }
        }
        appsByName.withLockedValue { $0[old.name] = nil }
        return updated
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

    /// The columns that hold how an app authenticates to APNs.
    private static func authColumns(
        _ authentication: App.Authentication
    ) -> (kind: String, keyID: String?, teamID: String?, keyPath: String?, certificatePath: String?) {
        switch authentication {
        case .token(let keyID, let teamID, let keyPath): ("token", keyID, teamID, keyPath, nil)
        case .certificate(let path): ("certificate", nil, nil, nil, path)
        case .fcmOnly: ("none", nil, nil, nil, nil)
        }
    }

    /// An app's columns, a line for each group ``apps(from:)`` reads.
    private static let appColumns =
        """
        id, name, topic, environment, endpoint, dialect, auth_kind,
        key_id, team_id, key_path, certificate_path, created_at, fcm_service_account_path, retraction_mode, retraction_text,
        approval_threshold, approval_window_minutes, carrier_interruption_level
        """

    private static func apps(from rows: PostgresRowSequence) async throws -> [App] {
        var apps: [App] = []
        for try await row in rows {
            var columns = ColumnReader(row)
            let (id, name, topic, environment, endpoint, dialect, authKind) = try columns.next(
                (Int64, String, String, String, String?, String, String).self)
            let (keyID, teamID, keyPath, certificatePath, createdAt, fcmServiceAccountPath, mode, text) = try columns.next(
                (String?, String?, String?, String?, Date, String?, String, String).self)
            let (approvalThreshold, approvalWindowMinutes, interruption) = try columns.next((Int?, Int, String).self)
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
                    carrierInterruption: RetractionAPS.Interruption(rawValue: interruption) ?? .passive,
                    approvalThreshold: approvalThreshold,
                    approvalWindowMinutes: approvalWindowMinutes,
                    createdAt: createdAt
                ))
        }
        return apps
    }
}
