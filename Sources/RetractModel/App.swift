import Foundation
import RetractKit

/// An app Retract sends for: one topic in one APNs environment.
package struct App: Hashable, Sendable, Codable {
    package enum Environment: String, Hashable, Sendable, Codable, CaseIterable {
        case sandbox, production
    }

    /// How Retract authenticates to APNs for this app. Only where the
    /// credentials are is stored, never the credentials.
    package enum Authentication: Hashable, Sendable, Codable {
        /// A `.p8` signing key: its key id, the team id and the file's path.
        case token(keyID: String, teamID: String, keyPath: String)
        /// A PKCS#12 or PEM client certificate file.
        case certificate(path: String)
        /// No APNs credentials: the app reaches its devices through FCM only.
        case fcmOnly
    }

    package var id: Int64
    /// The name commands and the API use, such as `shop`.
    package var name: String
    /// The bundle id, sent as `apns-topic`.
    package var topic: String
    package var environment: Environment
    /// An https base URL used instead of the environment's (the simulator, a proxy).
    package var endpoint: String?
    package var dialect: PayloadDialect
    package var authentication: Authentication
    /// The path of the app's Firebase service-account JSON file, when it sends through FCM.
    package var fcmServiceAccountPath: String?
    /// How its retractions reach phones unless one says otherwise.
    package var retractionMode: RetractionMode = .background
    /// What a retraction alert shows (`service-extension` without the
    /// filtering entitlement, `replace`).
    package var retractionText: String = RetractionMode.defaultText
    /// How its alert carriers (`service-extension`, `replace`) interrupt on
    /// iOS 15 and later: passive unless it asks otherwise.
    package var carrierInterruption: RetractionAPS.Interruption = .passive
    /// Its approval rule: a retraction of more devices than this waits for
    /// a second key's approval; nil, none does.
    package var approvalThreshold: Int?
    /// How long a retraction waits for approval before it expires.
    package var approvalWindowMinutes: Int = App.defaultApprovalWindowMinutes
    package var createdAt: Date

    /// A day.
    package static let defaultApprovalWindowMinutes = 1440
    /// The largest approval threshold the ledger keeps (a PostgreSQL `integer`).
    package static let maximumApprovalThreshold = Int(Int32.max)
    /// The longest an approval window may be: 30 days.
    package static let maximumApprovalWindowMinutes = 43_200

    package init(
        id: Int64, name: String, topic: String, environment: Environment, endpoint: String? = nil, dialect: PayloadDialect,
        authentication: Authentication, fcmServiceAccountPath: String? = nil, retractionMode: RetractionMode = .background,
        retractionText: String = RetractionMode.defaultText, carrierInterruption: RetractionAPS.Interruption = .passive,
        approvalThreshold: Int? = nil, approvalWindowMinutes: Int = App.defaultApprovalWindowMinutes, createdAt: Date
    ) {
        self.id = id
        self.name = name
        self.topic = topic
        self.environment = environment
        self.endpoint = endpoint
        self.dialect = dialect
        self.authentication = authentication
        self.fcmServiceAccountPath = fcmServiceAccountPath
        self.retractionMode = retractionMode
        self.retractionText = retractionText
        self.carrierInterruption = carrierInterruption
        self.approvalThreshold = approvalThreshold
        self.approvalWindowMinutes = approvalWindowMinutes
        self.createdAt = createdAt
    }

    /// Whether a connection made for `other` serves this app as well: the
    /// same endpoint, environment, topic and credentials. Its retraction
    /// settings do not matter to a connection.
    package func sendsAlike(_ other: App) -> Bool {
        id == other.id && endpoint == other.endpoint && environment == other.environment && topic == other.topic
            && authentication == other.authentication && fcmServiceAccountPath == other.fcmServiceAccountPath && dialect == other.dialect
    }

    /// The services the app has credentials for.
    package var services: [PushService] {
        (authentication == .fcmOnly ? [] : [.apns]) + (fcmServiceAccountPath == nil ? [] : [.fcm])
    }

    /// The files the app's credentials are read from.
    package var credentialPaths: [String] {
        var paths: [String] = []
        switch authentication {
        case .token(_, _, let keyPath): paths.append(keyPath)
        case .certificate(let path): paths.append(path)
        case .fcmOnly: break
        }
        if let fcmServiceAccountPath { paths.append(fcmServiceAccountPath) }
        return paths
    }

    /// Why devices of the app cannot be reached through `service`, or nil when they can.
    package func problem(reaching service: PushService) -> String? {
        services.contains(service) ? nil : Self.missingCredentials(for: service, app: name)
    }

    /// What app `app` lacks to reach devices through `service`.
    package static func missingCredentials(for service: PushService, app: String) -> String {
        switch service {
        case .apns: "app \(app) has no APNs key or certificate: it sends through FCM only"
        case .fcm: "app \(app) has no FCM service account (retract apps add --fcm-service-account FILE)"
        }
    }
}

/// What registering an app takes; the store gives it its id.
package struct AppRegistration: Hashable, Sendable {
    package var name: String
    package var topic: String
    package var environment: App.Environment
    package var endpoint: String?
    package var dialect: PayloadDialect
    package var authentication: App.Authentication
    package var fcmServiceAccountPath: String?
    package var retractionMode: RetractionMode
    package var retractionText: String
    package var carrierInterruption: RetractionAPS.Interruption
    package var approvalThreshold: Int?
    package var approvalWindowMinutes: Int

    package init(
        name: String,
        topic: String,
        environment: App.Environment,
        endpoint: String? = nil,
        dialect: PayloadDialect = .canonical,
        authentication: App.Authentication,
        fcmServiceAccountPath: String? = nil,
        retractionMode: RetractionMode = .background,
        retractionText: String = RetractionMode.defaultText,
        carrierInterruption: RetractionAPS.Interruption = .passive,
        approvalThreshold: Int? = nil,
        approvalWindowMinutes: Int = App.defaultApprovalWindowMinutes
    ) {
        self.name = name
        self.topic = topic
        self.environment = environment
        self.endpoint = endpoint
        self.dialect = dialect
        self.authentication = authentication
        self.fcmServiceAccountPath = fcmServiceAccountPath
        self.retractionMode = retractionMode
        self.retractionText = retractionText
        self.carrierInterruption = carrierInterruption
        self.approvalThreshold = approvalThreshold
        self.approvalWindowMinutes = approvalWindowMinutes
    }

    /// Every field the registration sets, for the audit log.
    package var auditDetails: [String: String] {
        var details = ["name": name, "topic": topic, "environment": environment.rawValue, "dialect": dialect.rawValue]
        details["endpoint"] = endpoint
        switch authentication {
        case .token(let keyID, let teamID, let keyPath):
            details["auth"] = "token"
            details["keyID"] = keyID
            details["teamID"] = teamID
            details["keyPath"] = keyPath
        case .certificate(let path):
            details["auth"] = "certificate"
            details["certificatePath"] = path
        case .fcmOnly:
            details["auth"] = "none"
        }
        details["fcmServiceAccountPath"] = fcmServiceAccountPath
        details["retractionMode"] = retractionMode.rawValue
        details["retractionText"] = retractionText
        details["carrierInterruptionLevel"] = carrierInterruption.rawValue
        details["approvalThreshold"] = approvalThreshold.map(String.init)
        details["approvalWindowMinutes"] = String(approvalWindowMinutes)
        return details
    }

    /// Whether `name` is a name an app can have: 1 to 63 of `a-z 0-9 . _ -`,
    /// starting with a letter or digit (the ledger checks the same).
    package static func isValidName(_ name: String) -> Bool {
        name.range(of: #"^[a-z0-9][a-z0-9._-]{0,62}$"#, options: .regularExpression) != nil
    }

    /// The first thing wrong with the registration, naming the field, or nil.
    package var problem: FieldProblem? {
        if !Self.isValidName(name) {
            return FieldProblem("name", "\"\(name)\": 1 to 63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit")
        }
        if topic.isEmpty || topic.utf8.count > 255 || topic.contains(where: \.isWhitespace) || topic.containsControlCharacters {
            return FieldProblem(
                "topic", "\"\(topic.debugDescription.dropFirst().dropLast())\": the app's bundle id, 1 to 255 characters without spaces")
        }
        if let endpoint, !endpoint.hasPrefix("https://") || endpoint.containsControlCharacters || URL(string: endpoint) == nil {
            return FieldProblem("endpoint", "\"\(endpoint.debugDescription.dropFirst().dropLast())\": an https:// URL")
        }
        if case .token(let keyID, let teamID, let keyPath) = authentication {
            for (field, value) in [("keyID", keyID), ("teamID", teamID)]
            where value.range(of: #"^[A-Z0-9]{10}$"#, options: .regularExpression) == nil {
                return FieldProblem(field, "\"\(value)\": 10 uppercase letters or digits, as Apple issues it")
            }
            if keyPath.isEmpty || keyPath.containsControlCharacters { return FieldProblem("keyPath", "the path of the .p8 file") }
        }
        if case .certificate(let path) = authentication, path.isEmpty || path.containsControlCharacters {
            return FieldProblem("certificatePath", "the path of the .p12 or .pem file")
        }
        if let path = fcmServiceAccountPath, path.isEmpty || path.containsControlCharacters {
            return FieldProblem("fcmServiceAccountPath", "the path of the service account's JSON file")
        }
        if authentication == .fcmOnly, fcmServiceAccountPath == nil {
            return FieldProblem("credentials", "an APNs key or certificate, or an FCM service account")
        }
        if let problem = RetractionMode.problem(withText: retractionText) { return FieldProblem("retractionText", problem) }
        if let approvalThreshold, !(0...App.maximumApprovalThreshold).contains(approvalThreshold) {
            return FieldProblem(
                "approvalThreshold",
                "\(approvalThreshold): a number of devices, 0 to \(App.maximumApprovalThreshold) (0: every retraction waits)")
        }
        if !(1...App.maximumApprovalWindowMinutes).contains(approvalWindowMinutes) {
            return FieldProblem(
                "approvalWindowMinutes", "\(approvalWindowMinutes): 1 to \(App.maximumApprovalWindowMinutes) minutes (30 days)")
        }
        return nil
    }
}
