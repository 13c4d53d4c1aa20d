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
            retractionText: given.retractionText ?? RetractionMode.defaultText)
        if let problem = registration.problem { throw APIProblem.invalid(problem.field, problem.message) }
        if let endpoint = given.endpoint, !EndpointAllowList(settings.allowedEndpoints).allows(endpoint) {
            throw APIProblem.invalid(
                "endpoint",
                "\"\(endpoint.prefix(200))\" is not a host this server sends to (\(settings.allowedEndpoints.joined(separator: ", "))); "
                    + "its operator allows others with --allowed-endpoint")
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
