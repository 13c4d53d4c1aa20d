import Foundation
import RetractKit

/// A change to a registered app's settings (`PATCH /v1/apps/{name}`, `retract
/// apps update`): each field nil when it stays as it is. The name, topic,
/// environment and dialect never change: the ledger's deliveries were
/// recorded for them.
package struct AppChange: Hashable, Sendable {
    /// A new endpoint; `.some(nil)` goes back to the environment's.
    package var endpoint: String??
    /// New token-auth fields: those not given keep the app's own when it
    /// uses token auth already, and are required when it switches to it.
    package var keyID: String?
    package var teamID: String?
    package var keyPath: String?
    /// A client certificate instead of the app's token key.
    package var certificatePath: String?
    /// A new service account; `.some(nil)` takes FCM away (only from an app that has APNs credentials).
    package var fcmServiceAccountPath: String??
    package var retractionMode: RetractionMode?
    package var retractionText: String?
    package var carrierInterruption: RetractionAPS.Interruption?
    /// A new approval threshold; `.some(nil)` for none.
    package var approvalThreshold: Int??
    package var approvalWindowMinutes: Int?

    package init(
        endpoint: String?? = nil, keyID: String? = nil, teamID: String? = nil, keyPath: String? = nil, certificatePath: String? = nil,
        fcmServiceAccountPath: String?? = nil, retractionMode: RetractionMode? = nil, retractionText: String? = nil,
        carrierInterruption: RetractionAPS.Interruption? = nil, approvalThreshold: Int?? = nil, approvalWindowMinutes: Int? = nil
    ) {
        self.endpoint = endpoint
        self.keyID = keyID
        self.teamID = teamID
        self.keyPath = keyPath
        self.certificatePath = certificatePath
        self.fcmServiceAccountPath = fcmServiceAccountPath
        self.retractionMode = retractionMode
        self.retractionText = retractionText
        self.carrierInterruption = carrierInterruption
        self.approvalThreshold = approvalThreshold
        self.approvalWindowMinutes = approvalWindowMinutes
    }

    /// Whether it changes nothing.
    package var isEmpty: Bool { self == AppChange() }

    /// Whether it names any credential.
    package var changesCredentials: Bool {
        keyID != nil || teamID != nil || keyPath != nil || certificatePath != nil || fcmServiceAccountPath != nil
    }

    /// `app` with the change made, checked as a registration is; the first
    /// problem names its field.
    package func applied(to app: App) throws(FieldProblem) -> App {
        var changed = app
        if let endpoint { changed.endpoint = endpoint }
        if let certificatePath {
            for (field, value) in [("keyID", keyID), ("teamID", teamID), ("keyPath", keyPath)] where value != nil {
                throw FieldProblem(field, "give either certificatePath or keyID, teamID and keyPath, not both")
            }
            changed.authentication = .certificate(path: certificatePath)
        } else if keyID != nil || teamID != nil || keyPath != nil {
            var current: (keyID: String?, teamID: String?, keyPath: String?) = (nil, nil, nil)
            if case .token(let keyID, let teamID, let keyPath) = app.authentication { current = (keyID, teamID, keyPath) }
            let merged = (keyID ?? current.keyID, teamID ?? current.teamID, keyPath ?? current.keyPath)
            for (field, value) in [("keyID", merged.0), ("teamID", merged.1), ("keyPath", merged.2)] where value == nil {
                throw FieldProblem(field, "missing: app \(app.name) has no token key yet, so token auth takes keyID, teamID and keyPath")
            }
            changed.authentication = .token(keyID: merged.0 ?? "", teamID: merged.1 ?? "", keyPath: merged.2 ?? "")
        }
        if let fcmServiceAccountPath { changed.fcmServiceAccountPath = fcmServiceAccountPath }
        if let retractionMode { changed.retractionMode = retractionMode }
        if let retractionText { changed.retractionText = retractionText }
        if let carrierInterruption { changed.carrierInterruption = carrierInterruption }
        if let approvalThreshold { changed.approvalThreshold = approvalThreshold }
        if let approvalWindowMinutes { changed.approvalWindowMinutes = approvalWindowMinutes }
        if let problem = AppRegistration(changed).problem {
            if problem.field == "credentials" {
                throw FieldProblem("fcmServiceAccountPath", "app \(app.name) sends through FCM only: it keeps its service account")
            }
            throw problem
        }
        return changed
    }

    /// What changed from `old` to `new`, field by field, as the audit log
    /// keeps it: (field, before, after), nil where a field is not set.
    package static func differences(from old: App, to new: App) -> [(field: String, from: String?, to: String?)] {
        let before = AppRegistration(old).auditDetails
        let after = AppRegistration(new).auditDetails
        return Set(before.keys).union(after.keys).sorted().compactMap { field in
            before[field] == after[field] ? nil : (field, before[field], after[field])
        }
    }
}

extension AppRegistration {
    /// The registration `app` would have now.
    package init(_ app: App) {
        self.init(
            name: app.name, topic: app.topic, environment: app.environment, endpoint: app.endpoint, dialect: app.dialect,
            authentication: app.authentication, fcmServiceAccountPath: app.fcmServiceAccountPath, retractionMode: app.retractionMode,
            retractionText: app.retractionText, carrierInterruption: app.carrierInterruption, approvalThreshold: app.approvalThreshold,
            approvalWindowMinutes: app.approvalWindowMinutes)
    }
}
