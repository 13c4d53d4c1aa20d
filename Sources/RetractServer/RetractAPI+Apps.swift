import Foundation
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractStore

extension RetractAPI {
    /// `POST /v1/apps`: registers an app; an admin key that names no app.
    func createApp(_ input: PostInput) async throws -> Answer {
        let (body, caller) = (input.body, input.caller)
        try caller.require(.admin)
        guard caller.isForAllApps else { throw APIProblem(.forbidden, "registering apps needs an admin key that names no app") }
        var given = try JSONBody.decode(AppBody.self, from: body)
        guard let environment = App.Environment(rawValue: given.environment) else {
            throw APIProblem.invalid("environment", "\"\(given.environment.prefix(40))\": sandbox or production")
        }
        var dialect = PayloadDialect.canonical
        if let text = given.dialect {
            guard let given = PayloadDialect(rawValue: text) else {
                throw APIProblem.invalid("dialect", "\"\(text.prefix(40))\": canonical or legacy")
            }
            dialect = given
        }
        // The fields' shapes first, then where the files are, then what is in them.
        var registration = AppRegistration(
            name: given.name, topic: given.topic, environment: environment, endpoint: given.endpoint, dialect: dialect,
            authentication: try Self.authentication(given), fcmServiceAccountPath: given.fcmServiceAccountPath,
            retractionMode: try Validate.mode(given.retractionMode, field: "retractionMode") ?? .background,
            retractionText: given.retractionText ?? RetractionMode.defaultText,
            carrierInterruption: try Validate.interruption(given.carrierInterruptionLevel, field: "carrierInterruptionLevel") ?? .passive,
            approvalThreshold: given.approvalThreshold,
            approvalWindowMinutes: given.approvalWindowMinutes ?? App.defaultApprovalWindowMinutes)
        if let problem = registration.problem { throw APIProblem.invalid(problem.field, problem.message) }
        if let endpoint = given.endpoint, !EndpointAllowList(settings.allowedEndpoints).allows(endpoint) {
            throw Self.endpointRefused(endpoint, settings: settings)
        }
        given.keyPath = try credentialFile(given.keyPath, field: "keyPath")
        given.certificatePath = try credentialFile(given.certificatePath, field: "certificatePath")
        given.fcmServiceAccountPath = try credentialFile(given.fcmServiceAccountPath, field: "fcmServiceAccountPath")
        registration.authentication = try Self.authentication(given)
        registration.fcmServiceAccountPath = given.fcmServiceAccountPath
        let app: App
        do {
            app = try await engine.registerApp(registration, actor: caller.actor)
        } catch {
            // Admins registering apps may read where the files are on the server.
            guard error.code == .credentials else { throw error }
            throw APIProblem(.appCredentials, error.message, field: error.field)
        }
        return Answer(.created, AppView(app))
    }

    /// `PATCH /v1/apps/{name}`: changes an app's retraction mode and text,
    /// approval rule, endpoint and credentials; an admin key that may touch
    /// the app. Every field is checked before anything changes, each changed
    /// field is audited, and the next retraction uses the new settings.
    func updateApp(_ input: PostInput) async throws -> Answer {
        let caller = input.caller
        try caller.require(.admin)
        let named = try await app(named: input.appName ?? "", for: caller, field: "name")
        // The app as the ledger has it now, not as a cache kept it: the change is made only while it is still so.
        guard let current = try await engine.app(id: named.id) else {
            throw APIProblem(.notFound, "name: no app named \"\(named.name)\" for this API key", field: "name")
        }
        let given = try JSONBody.decode(AppPatchBody.self, from: input.body)
        let change = try checkedChange(given, of: current)
        let updated: App
        do {
            updated = try await engine.updateApp(current, change: change, actor: caller.actor)
        } catch {
            guard error.code == .credentials else { throw error }
            throw APIProblem(.appCredentials, error.message, field: error.field)
        }
        return Answer(.ok, AppView(updated))
    }

    /// The change `given` asks of `app`, every field checked, its files found in the credentials folder.
    private func checkedChange(_ given: AppPatchBody, of app: App) throws(APIProblem) -> AppChange {
        if let field = given.refused.first {
            let why =
                AppPatchBody.fixed.contains(field) ? "is set when the app is registered and cannot change" : "is not a setting of an app"
            throw APIProblem.invalid(field, "\(why); this endpoint changes \(AppPatchBody.changeable)")
        }
        var change = AppChange(
            endpoint: given.endpoint, keyID: given.keyID, teamID: given.teamID, keyPath: given.keyPath,
            certificatePath: given.certificatePath, fcmServiceAccountPath: given.fcmServiceAccountPath,
            retractionMode: try Validate.mode(given.retractionMode, field: "retractionMode"), retractionText: given.retractionText,
            carrierInterruption: try Validate.interruption(given.carrierInterruptionLevel, field: "carrierInterruptionLevel"),
            approvalThreshold: given.approvalThreshold, approvalWindowMinutes: given.approvalWindowMinutes)
        guard !change.isEmpty else { throw APIProblem.invalid("body", "nothing to change: give one or more of \(AppPatchBody.changeable)") }
        if let endpoint = given.endpoint ?? nil, !EndpointAllowList(settings.allowedEndpoints).allows(endpoint) {
            throw Self.endpointRefused(endpoint, settings: settings)
        }
        // The fields' shapes (an empty path, say) before any file is looked for, as registration does.
        let shapes = Result { () throws(FieldProblem) in try change.applied(to: app) }
        if case .failure(let problem) = shapes { throw APIProblem.invalid(problem.field, problem.message) }
        change.keyPath = try credentialFile(given.keyPath, field: "keyPath")
        change.certificatePath = try credentialFile(given.certificatePath, field: "certificatePath")
        if let path = given.fcmServiceAccountPath {
            change.fcmServiceAccountPath = .some(try credentialFile(path, field: "fcmServiceAccountPath"))
        }
        return change
    }

    static func endpointRefused(_ endpoint: String, settings: ServerSettings) -> APIProblem {
        APIProblem.invalid(
            "endpoint",
            "\"\(endpoint.prefix(200))\" is not a host this server sends to (\(settings.allowedEndpoints.joined(separator: ", "))); "
                + "its operator allows others with --allowed-endpoint")
    }

    /// The credential file `given` names, resolved in the server's credentials
    /// folder; one outside it is refused without saying whether it exists.
    private func credentialFile(_ given: String?, field: String) throws(APIProblem) -> String? {
        guard let given else { return nil }
        guard let folder = settings.credentialsDirectory.flatMap(CredentialsFolder.init) else {
            throw APIProblem(
                .appCredentials, "\(field): this server takes no credential files over the API; its operator sets --credentials-dir",
                field: field)
        }
        do {
            return try folder.file(given)
        } catch .outside {
            throw APIProblem(
                .appCredentials, "\(field): name a file in the server's credentials folder (a path relative to it, or inside it)",
                field: field)
        } catch {
            throw APIProblem(.appCredentials, "\(field): no file \"\(given.prefix(200))\" in the server's credentials folder", field: field)
        }
    }

    private static func authentication(_ given: AppBody) throws(APIProblem) -> App.Authentication {
        // An app that sends through FCM only names no APNs credentials at all.
        if given.fcmServiceAccountPath != nil, given.certificatePath == nil, given.keyID == nil, given.teamID == nil, given.keyPath == nil {
            return .fcmOnly
        }
        if let certificatePath = given.certificatePath {
            guard given.keyID == nil, given.teamID == nil, given.keyPath == nil else {
                throw APIProblem.invalid("certificatePath", "give either certificatePath or keyID, teamID and keyPath, not both")
            }
            return .certificate(path: certificatePath)
        }
        for (field, value) in [("keyID", given.keyID), ("teamID", given.teamID), ("keyPath", given.keyPath)] where value == nil {
            throw APIProblem.invalid(
                field, "missing: token auth takes keyID, teamID and keyPath (or give certificatePath, or only fcmServiceAccountPath)")
        }
        return .token(keyID: given.keyID ?? "", teamID: given.teamID ?? "", keyPath: given.keyPath ?? "")
    }
}
