import ArgumentParser
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// `retract apps`: the apps Retract sends for.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "Register, change and list apps.",
        subcommands: [Add.self, Update.self, List.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an app: its topic, APNs environment and credentials.",
            discussion: """
                Token auth (a .p8 key: --key-id, --team-id, --key-path, or APNS_KEY_ID, APNS_TEAM_ID, \
                APNS_KEY_PATH) or certificate auth (--certificate, a .p12 or a PEM with the key). Devices \
                reached through Firebase Cloud Messaging need --fcm-service-account, the service \
                account's JSON file Google issues; an app that sends through FCM only needs nothing else. \
                The ledger keeps the files' paths, never the keys; the files are read now to check them, \
                and again by whatever process sends.

                Exit codes: 0 registered; 2 bad argument or the name is taken; 4 database unreachable; \
                8 a key, certificate or service-account file is missing or unusable.
                """
        )

        @Argument(help: "The app's name in commands and the API, such as shop.")
        var name: String

        @Option(help: "The app's bundle id (apns-topic).")
        var topic: String

        @Option(help: "sandbox or production.")
        var environment: App.Environment = .production

        @Option(help: "An https:// base URL to send to instead of Apple's (the simulator, a proxy).")
        var endpoint: String?

        @Option(help: "canonical, or legacy for apps running the article's code (misspelled keys, integer ids).")
        var dialect: PayloadDialect = .canonical

        @Option(help: "The .p8 key's id (10 characters); APNS_KEY_ID when not given.")
        var keyID: String?

        @Option(help: "The Apple team id (10 characters); APNS_TEAM_ID when not given.")
        var teamID: String?

        @Option(help: "The .p8 file; APNS_KEY_PATH when not given.")
        var keyPath: String?

        @Option(help: "A .p12 client certificate, or a PEM with certificate and key, instead of a .p8 key.")
        var certificate: String?

        @Option(
            help: ArgumentHelp(
                "The Firebase service account's JSON file, for devices reached through FCM; FCM_SERVICE_ACCOUNT_FILE when not given.",
                valueName: "FILE"))
        var fcmServiceAccount: String?

        @Option(
            help: ArgumentHelp(
                "How its retractions reach phones unless one says otherwise: background, service-extension or replace.",
                valueName: "MODE"))
        var retractionMode: RetractionMode = .background

        @Option(
            help: ArgumentHelp(
                "What the alert of a service-extension (without the filtering entitlement) or replace retraction shows.",
                valueName: "TEXT"))
        var retractionText: String = RetractionMode.defaultText

        @Option(
            help: ArgumentHelp(
                "How the alerts of service-extension and replace retractions and edits interrupt on iOS 15 and later: passive (listed without lighting the screen or a sound) or active.",
                valueName: "LEVEL"))
        var carrierInterruptionLevel: RetractionAPS.Interruption = .passive

        @Option(
            help: ArgumentHelp(
                "A retraction of more devices than this waits until another key or user approves it (0: every one).",
                valueName: "DEVICES"))
        var approvalThreshold: Int?

        @Option(help: ArgumentHelp("How long a retraction waits for approval before it expires.", valueName: "MINUTES"))
        var approvalWindowMinutes: Int = App.defaultApprovalWindowMinutes

        @Flag(help: "Print the app as JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            do {
                let registration = try registration()
                let settings = APNsSettings(certificatePassphrase: EngineOptions.certificatePassphrase())
                let app = try await database.withStore { store in
                    let engine = RetractEngine(store: store, transports: PushTransports(settings: settings))
                    return try await engine.registerApp(registration, actor: Self.actor)
                }
                if json {
                    try printJSON(app)
                } else {
                    print("registered app \(app.name) (id \(app.id)): \(app.topic), \(app.environment.rawValue), \(describe(app))")
                }
            } catch {
                throw fail("apps add", error)
            }
        }

        private func registration(
            environment env: [String: String] = ProcessInfo.processInfo.environment
        ) throws(RetractError) -> AppRegistration {
            let authentication: App.Authentication
            let fcmPath = (fcmServiceAccount ?? env["FCM_SERVICE_ACCOUNT_FILE"]).flatMap { $0.isEmpty ? nil : absolute($0) }
            // FCM only when the flags name no APNs credential and the environment names none either.
            let apnsFlags = certificate != nil || keyID != nil || teamID != nil || keyPath != nil
            let apnsEnvironment = ["APNS_KEY_ID", "APNS_TEAM_ID", "APNS_KEY_PATH"].contains { env[$0]?.isEmpty == false }
            if fcmPath != nil, !apnsFlags, !apnsEnvironment {
                authentication = .fcmOnly
            } else if let certificate {
                if keyID != nil || teamID != nil || keyPath != nil {
                    throw RetractError(.invalidInput, "give either --certificate or --key-id/--team-id/--key-path, not both")
                }
                authentication = .certificate(path: absolute(certificate))
            } else {
                guard let keyID = keyID ?? env["APNS_KEY_ID"], let teamID = teamID ?? env["APNS_TEAM_ID"],
                    let keyPath = keyPath ?? env["APNS_KEY_PATH"]
                else {
                    throw RetractError(
                        .invalidInput,
                        "credentials: give --key-id, --team-id and --key-path (or APNS_KEY_ID, APNS_TEAM_ID, APNS_KEY_PATH), or --certificate, or --fcm-service-account"
                    )
                }
                authentication = .token(keyID: keyID, teamID: teamID, keyPath: absolute(keyPath))
            }
            let registration = AppRegistration(
                name: name, topic: topic, environment: environment, endpoint: endpoint, dialect: dialect, authentication: authentication,
                fcmServiceAccountPath: fcmPath, retractionMode: retractionMode, retractionText: retractionText,
                carrierInterruption: carrierInterruptionLevel, approvalThreshold: approvalThreshold,
                approvalWindowMinutes: approvalWindowMinutes)
            if let problem = registration.problem {
                throw RetractError(problem).naming(Self.flags)
            }
            return registration
        }

        /// The command-line names of the registration's fields.
        static let flags = [
            "topic": "--topic", "endpoint": "--endpoint", "keyID": "--key-id", "teamID": "--team-id", "keyPath": "--key-path",
            "certificatePath": "--certificate", "fcmServiceAccountPath": "--fcm-service-account", "retractionText": "--retraction-text",
            "approvalThreshold": "--approval-threshold", "approvalWindowMinutes": "--approval-window-minutes",
        ]

        private func absolute(_ path: String) -> String {
            URL(fileURLWithPath: path).standardizedFileURL.path
        }

        static let actor = "cli:\(ProcessInfo.processInfo.environment["USER"] ?? "unknown")"
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an app's retraction mode and text, endpoint or credentials.",
            discussion: """
                Only what is given changes; each changed field is written to the audit log. \
                --approval-threshold N makes a retraction of more than N devices wait for approval \
                (retract approve); none turns approval off. The next \
                retraction uses the new settings (a server that reads the app by name sees a change made \
                elsewhere within 5 seconds). Credential files are read now, to check them. Token-auth flags \
                not given keep the app's own; --certificate replaces a token key, and --key-id, --team-id \
                and --key-path together replace a certificate. The name, topic, environment and dialect \
                cannot change: register a new app.

                Exit codes: 0 changed (or the values given were the app's already); 2 bad argument; \
                4 database unreachable; 6 no such app; 8 a key, certificate or service-account file is \
                missing or unusable; 10 the app was changed by someone else meanwhile (run it again).
                """
        )

        @Argument(help: "The app's name.")
        var name: String

        @Option(help: "An https:// base URL to send to instead of Apple's; none for Apple's.")
        var endpoint: String?

        @Option(help: "The .p8 key's id (10 characters).")
        var keyID: String?

        @Option(help: "The Apple team id (10 characters).")
        var teamID: String?

        @Option(help: "The .p8 file.")
        var keyPath: String?

        @Option(help: "A .p12 client certificate, or a PEM with certificate and key, instead of a .p8 key.")
        var certificate: String?

        @Option(help: ArgumentHelp("The Firebase service account's JSON file; none to stop sending through FCM.", valueName: "FILE"))
        var fcmServiceAccount: String?

        @Option(help: ArgumentHelp("background, service-extension or replace.", valueName: "MODE"))
        var retractionMode: RetractionMode?

        @Option(help: ArgumentHelp("What the alert of a service-extension or replace retraction shows.", valueName: "TEXT"))
        var retractionText: String?

        @Option(help: ArgumentHelp("passive or active: how alert carriers interrupt on iOS 15 and later.", valueName: "LEVEL"))
        var carrierInterruptionLevel: RetractionAPS.Interruption?

        @Option(
            help: ArgumentHelp(
                "A retraction of more devices than this waits for another's approval (0: every one); none for no approval.",
                valueName: "DEVICES"))
        var approvalThreshold: String?

        @Option(help: ArgumentHelp("How long a retraction waits for approval before it expires.", valueName: "MINUTES"))
        var approvalWindowMinutes: Int?

        @Flag(help: "Print the app as JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            do {
                let change = try change()
                guard !change.isEmpty else {
                    throw RetractError(
                        .invalidInput,
                        "nothing to change: give --retraction-mode, --retraction-text, --carrier-interruption-level, --approval-threshold, --endpoint or a credential"
                    )
                }
                let settings = APNsSettings(certificatePassphrase: EngineOptions.certificatePassphrase())
                let (before, app) = try await database.withStore { store in
                    let engine = RetractEngine(store: store, transports: PushTransports(settings: settings))
                    let named = try await engine.app(named: name)
                    // As the ledger has it now: the change is made only while it is still so.
                    guard let current = try await engine.app(id: named.id) else {
                        throw RetractError(.unknownApp, "no app named \"\(name)\"")
                    }
                    return (current, try await engine.updateApp(current, change: change, actor: Add.actor))
                }
                if json {
                    try printJSON(app)
                } else {
                    let changed = AppChange.differences(from: before, to: app)
                    if changed.isEmpty { print("app \(app.name): nothing changed") }
                    for (field, from, to) in changed { print("app \(app.name): \(field) \(from ?? "(none)") -> \(to ?? "(none)")") }
                }
            } catch {
                throw fail(
                    "apps update",
                    (error as? RetractError)?.naming(Add.flags.merging(["credentials": "--fcm-service-account"]) { $1 }) ?? error)
            }
        }

        private func change() throws(RetractError) -> AppChange {
            func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
            var change = AppChange(
                keyID: keyID, teamID: teamID, keyPath: keyPath.map(absolute), certificatePath: certificate.map(absolute),
                retractionMode: retractionMode, retractionText: retractionText, carrierInterruption: carrierInterruptionLevel,
                approvalWindowMinutes: approvalWindowMinutes)
            if let approvalThreshold {
                guard approvalThreshold == "none" || Int(approvalThreshold) != nil else {
                    throw RetractError(.invalidInput, "--approval-threshold: \"\(approvalThreshold)\" is not a number of devices, or none")
                }
                change.approvalThreshold = .some(Int(approvalThreshold))
            }
            if let endpoint { change.endpoint = .some(endpoint == "none" ? nil : endpoint) }
            if let fcmServiceAccount {
                change.fcmServiceAccountPath = .some(fcmServiceAccount == "none" ? nil : absolute(fcmServiceAccount))
            }
            return change
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered apps.")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            do {
                let apps = try await database.withStore { store in try await store.apps() }
                if json {
                    try printJSON(apps)
                } else if apps.isEmpty {
                    print("no apps yet: retract apps add NAME --topic BUNDLE-ID ...")
                } else {
                    for app in apps {
                        print("\(app.name)\t\(app.topic)\t\(app.environment.rawValue)\t\(app.dialect.rawValue)\t\(describe(app))")
                    }
                }
            } catch {
                throw fail("apps list", error)
            }
        }
    }
}

private func describe(_ app: App) -> String {
    var parts: [String] = []
    switch app.authentication {
    case .token(let keyID, let teamID, let keyPath): parts.append("token auth, key \(keyID) of team \(teamID) at \(keyPath)")
    case .certificate(let path): parts.append("certificate auth, \(path)")
    case .fcmOnly: break
    }
    if let path = app.fcmServiceAccountPath { parts.append("FCM service account at \(path)") }
    parts.append("retractions in \(app.retractionMode.rawValue) mode")
    if app.carrierInterruption == .active { parts.append("alert carriers active (they light the screen)") }
    if let threshold = app.approvalThreshold {
        parts.append("retractions of more than \(threshold) devices wait for approval for \(app.approvalWindowMinutes) minutes")
    }
    return parts.joined(separator: "; ")
}

extension App.Environment: ExpressibleByArgument {}
extension PayloadDialect: ExpressibleByArgument {}
extension RetractionMode: ExpressibleByArgument {}
extension AndroidDisplay: ExpressibleByArgument {}
extension RetractionAPS.Interruption: ExpressibleByArgument {}

/// Prints a value as pretty JSON with sorted keys.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
