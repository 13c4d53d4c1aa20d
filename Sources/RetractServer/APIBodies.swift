import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore

// The request bodies the API takes and the answers it gives, as the
// OpenAPI spec (docs/openapi.yaml) describes them.

struct AppBody: Decodable, Sendable {
    var name: String
    var topic: String
    var environment: String
    var endpoint: String?
    var dialect: String?
    var keyID: String?
    var teamID: String?
    var keyPath: String?
    var certificatePath: String?
    var fcmServiceAccountPath: String?
    var retractionMode: String?
    var retractionText: String?
    /// `passive` (the default) or `active`: how its alert carriers interrupt on iOS 15 and later.
    var carrierInterruptionLevel: String?
    var approvalThreshold: Int?
    var approvalWindowMinutes: Int?
}

/// `PATCH /v1/apps/{name}`: the fields to change, each absent when it stays.
/// `endpoint` and `fcmServiceAccountPath` may be null, to remove them.
struct AppPatchBody: Decodable {
    var endpoint: String??
    var keyID: String?
    var teamID: String?
    var keyPath: String?
    var certificatePath: String?
    var fcmServiceAccountPath: String??
    var retractionMode: String?
    var retractionText: String?
    var carrierInterruptionLevel: String?
    var approvalThreshold: Int??
    var approvalWindowMinutes: Int?
    /// Fields given that this endpoint does not change, sorted.
    var refused: [String] = []

    /// What registration sets once and a change cannot.
    static let fixed: Set<String> = ["name", "topic", "environment", "dialect"]

    private enum Field: String, CodingKey, CaseIterable {
        case endpoint, keyID, teamID, keyPath, certificatePath, fcmServiceAccountPath, retractionMode, retractionText
        case carrierInterruptionLevel, approvalThreshold, approvalWindowMinutes
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        refused = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue).filter { Field(rawValue: $0) == nil }.sorted()
        let container = try decoder.container(keyedBy: Field.self)
        // Absent: unchanged (nil); null: removed (.some(nil)).
        func removable<Value: Decodable>(_ field: Field, as _: Value.Type = String.self) throws -> Value?? {
            guard container.contains(field) else { return nil }
            return try container.decodeNil(forKey: field) ? .some(nil) : .some(try container.decode(Value.self, forKey: field))
        }
        endpoint = try removable(.endpoint)
        fcmServiceAccountPath = try removable(.fcmServiceAccountPath)
        keyID = try container.decodeIfPresent(String.self, forKey: .keyID)
        teamID = try container.decodeIfPresent(String.self, forKey: .teamID)
        keyPath = try container.decodeIfPresent(String.self, forKey: .keyPath)
        certificatePath = try container.decodeIfPresent(String.self, forKey: .certificatePath)
        retractionMode = try container.decodeIfPresent(String.self, forKey: .retractionMode)
        retractionText = try container.decodeIfPresent(String.self, forKey: .retractionText)
        carrierInterruptionLevel = try container.decodeIfPresent(String.self, forKey: .carrierInterruptionLevel)
        approvalThreshold = try removable(.approvalThreshold, as: Int.self)
        approvalWindowMinutes = try container.decodeIfPresent(Int.self, forKey: .approvalWindowMinutes)
    }

    /// The fields this endpoint changes, for messages.
    static var changeable: String { Field.allCases.map(\.rawValue).joined(separator: ", ") }
}

struct AppView: Encodable {
    var id: Int64
    var name: String
    var topic: String
    var environment: String
    var endpoint: String?
    var dialect: String
    var auth: String
    var keyID: String?
    var teamID: String?
    var keyPath: String?
    var certificatePath: String?
    var fcmServiceAccountPath: String?
    var retractionMode: String
    var retractionText: String
    var carrierInterruptionLevel: String
    /// A retraction of more devices than this waits for a second key's approval.
    var approvalThreshold: Int?
    var approvalWindowMinutes: Int
    var createdAt: Date

    init(_ app: App) {
        id = app.id
        name = app.name
        topic = app.topic
        environment = app.environment.rawValue
        endpoint = app.endpoint
        dialect = app.dialect.rawValue
        retractionMode = app.retractionMode.rawValue
        retractionText = app.retractionText
        carrierInterruptionLevel = app.carrierInterruption.rawValue
        approvalThreshold = app.approvalThreshold
        approvalWindowMinutes = app.approvalWindowMinutes
        createdAt = app.createdAt
        switch app.authentication {
        case .token(let keyID, let teamID, let keyPath):
            auth = "token"
            self.keyID = keyID
            self.teamID = teamID
            self.keyPath = keyPath
        case .certificate(let path):
            auth = "certificate"
            certificatePath = path
        case .fcmOnly:
            auth = "none"
        }
        fcmServiceAccountPath = app.fcmServiceAccountPath
    }
}

struct DeliveryBody: Decodable {
    var app: String
    var reference: String
    var tokens: [String]
    var sentAt: String?
    /// `apns` (the default) or `fcm`: the service the notification went through.
    var transport: String?
    /// The `apns-collapse-id` (Android: notification tag) it was sent with.
    var collapseId: String?
    var thread: String?
    var sender: String?
    var recipient: String?
    var campaign: String?
    /// The account it is of, where one app on a phone holds several; absent: the app's only account.
    var account: String?

    var labels: DeliveryLabels { DeliveryLabels(thread: thread, sender: sender, recipient: recipient, campaign: campaign) }
}

struct RecordedView: Encodable {
    var recorded: Int
    var deliveries: Int
}

struct NotificationBody: Decodable {
    var app: String
    var reference: String
    var tokens: [String]
    /// Checked to be an object here; its bytes are read apart (see `payloadData`).
    var payload: JSONObjectShape
    var collapseID: String?
    var transport: String?
    /// How Android phones show it: `firebase` (the default) or `app` (data only).
    var androidDisplay: String?
    var thread: String?
    var sender: String?
    var recipient: String?
    var campaign: String?
    var account: String?

    var labels: DeliveryLabels { DeliveryLabels(thread: thread, sender: sender, recipient: recipient, campaign: campaign) }
}

/// Decodes only to check that a value is a JSON object.
struct JSONObjectShape: Decodable {
    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: AnyKey.self)
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

struct RetractionBody: Decodable {
    var app: String
    /// The references to retract, unless a selector is given.
    var references: [String]?
    /// One selector instead of references: every delivery of the app with this label.
    var thread: String?
    var sender: String?
    var recipient: String?
    var campaign: String?
    /// The selector's range (RFC 3339): sent at or after, and before.
    var sentAfter: String?
    var sentBefore: String?
    var reason: String?
    var dryRun: Bool?
    /// `background`, `service-extension` or `replace`; the app's default when absent.
    var mode: String?
    var badge: Int?
    /// What its alerts show instead of the app's retraction text (service-extension, replace).
    var text: String?
    /// The account whose references (or label) it retracts; absent: the app's only account.
    var account: String?

    /// The selectors given, by field.
    var selectors: [(kind: RetractionSelector.Kind, value: String)] {
        DeliveryLabels(thread: thread, sender: sender, recipient: recipient, campaign: campaign).given
    }
}

/// `POST /v1/edits`.
struct EditBody: Decodable {
    var app: String
    /// The one reference whose notification is edited.
    var reference: String
    /// The new title: absent, phones keep the one shown where they can.
    var title: String?
    var body: String
    var reason: String?
    var dryRun: Bool?
    /// `background`, `service-extension` or `replace`; the app's default when absent.
    var mode: String?
    /// What a retraction takes and an edit does not: refused by name, not ignored.
    var references: [String]?
    var badge: Int?
    var text: String?
    /// The account whose reference it edits; absent: the app's only account.
    var account: String?

    /// The first field given that a retraction takes and an edit does not, and why.
    var retractionField: (field: String, problem: String)? {
        if references != nil { return ("references", "an edit is of one reference: give it as `reference`") }
        if badge != nil { return ("badge", "an edit leaves the badge as it is") }
        if text != nil { return ("text", "an edit's alerts show its own title and body") }
        return nil
    }
}

/// `POST /v1/retractions/{id}/cancel`.
struct ReasonBody: Decodable {
    /// Why it is cancelled, approved or rejected: kept in the audit log and shown with the retraction.
    var reason: String
}

struct RetractionCreatedView: Encodable {
    /// Lowercase, as the CLI prints ids.
    var id: String
    var app: String
    /// The account it is of, when it names one.
    var account: String?
    var devices: Int
    var state: String
    var dryRun: Bool
    var mode: String
    /// For a retraction by selector: how many references it matched.
    var referencesMatched: Int?
    /// For a dry run: the most references one device would be sent.
    var mostReferencesPerDevice: Int?
    /// What the caller should know before (or after) it goes out.
    var warnings: [String]?
}

struct DeviceFeedView: Encodable {
    struct Entry: Encodable {
        var id: String
        var references: [String]
        var retractedAt: Date
        /// The account the retraction was of; nil: the app's only account.
        var account: String?
    }

    var retractions: [Entry]
    var cursor: String
    var hasMore: Bool
}

struct StatusView: Encodable {
    var status: String
}

/// Field checks shared by the endpoints; each names the field it refuses.
enum Validate {
    static func reference(_ text: String, field: String) throws(APIProblem) -> ReferenceID {
        do {
            return try ReferenceID(validating: text, field: field)
        } catch {
            throw APIProblem.invalid(field, error.message)
        }
    }

    static func tokens(_ texts: [String], field: String, limit: Int, service: PushService = .apns) throws(APIProblem) -> [DeviceToken] {
        guard !texts.isEmpty else { throw APIProblem.invalid(field, "at least one device token") }
        guard texts.count <= limit else { throw APIProblem.invalid(field, "\(texts.count) tokens; at most \(limit)") }
        var tokens: [DeviceToken] = []
        tokens.reserveCapacity(texts.count)
        for (index, text) in texts.enumerated() {
            tokens.append(try token(text, field: "\(field)[\(index)]", service: service))
        }
        return tokens
    }

    static func token(_ text: String, field: String, service: PushService = .apns) throws(APIProblem) -> DeviceToken {
        guard let token = service.token(text) else { throw APIProblem.invalid(field, service.tokenProblem(text)) }
        return token
    }

    /// A value as the ledger keeps it, maybe of an account (``LedgerScope``),
    /// as the console's links carry it: its account, checked, and the value.
    static func ledgerKey(_ text: String, field: String) throws(APIProblem) -> (account: String?, value: String) {
        let (account, value) = LedgerScope.split(text)
        if let account, let problem = AccountName.problem(with: account) { throw APIProblem.invalid(field, problem) }
        return (account, value)
    }

    /// A delivery mode, or nil when absent.
    static func mode(_ text: String?, field: String) throws(APIProblem) -> RetractionMode? {
        guard let text else { return nil }
        guard let mode = RetractionMode(rawValue: text) else {
            throw APIProblem.invalid(field, "\"\(text.prefix(40))\": one of \(RetractionMode.names)")
        }
        return mode
    }

    /// How an app's alert carriers interrupt, or nil when absent.
    static func interruption(_ text: String?, field: String) throws(APIProblem) -> RetractionAPS.Interruption? {
        guard let text else { return nil }
        guard let level = RetractionAPS.Interruption(rawValue: text) else {
            throw APIProblem.invalid(field, "\"\(text.prefix(40))\": passive (carriers do not light the screen) or active")
        }
        return level
    }

    /// `apns` (when absent) or `fcm`.
    static func transport(_ text: String?, field: String) throws(APIProblem) -> PushService {
        guard let text else { return .apns }
        guard let service = PushService(rawValue: text) else { throw APIProblem.invalid(field, "\"\(text.prefix(40))\": apns or fcm") }
        return service
    }

    /// How Android phones show an original; Firebase when not given.
    static func androidDisplay(_ text: String?, field: String) throws(APIProblem) -> AndroidDisplay {
        guard let text else { return .firebase }
        guard let display = AndroidDisplay(rawValue: text) else { throw APIProblem.invalid(field, AndroidDisplay.problem(text)) }
        return display
    }

    /// An RFC 3339 time, with or without fractional seconds.
    static func date(_ text: String, field: String) throws(APIProblem) -> Date {
        guard let date = (try? Date(text, strategy: plainTime)) ?? (try? Date(text, strategy: fractionalTime)) else {
            throw APIProblem.invalid(field, "\"\(text.prefix(80))\" is not an RFC 3339 time such as 2026-11-23T10:00:00Z")
        }
        return date
    }

    private static let plainTime = Date.ISO8601FormatStyle()
    private static let fractionalTime = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// A person's reason for an action, which the audit log keeps: without
    /// the spaces around it, and required.
    static func reason(_ text: String, field: String = "reason") throws(APIProblem) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw APIProblem.invalid(field, "a reason is required: it is kept in the audit log") }
        return try Self.text(trimmed, field: field, maximumLength: RetractAPI.maximumReasonLength)
    }

    static func text(_ text: String, field: String, maximumLength: Int) throws(APIProblem) -> String {
        guard text.count <= maximumLength else { throw APIProblem.invalid(field, "\(text.count) characters; at most \(maximumLength)") }
        // Line breaks and tabs are fine in a reason; NUL is not (PostgreSQL cannot store it).
        guard !text.unicodeScalars.contains(where: { $0.value == 0 }) else {
            throw APIProblem.invalid(field, "the NUL character is not allowed")
        }
        return text
    }
}

/// `POST /v1/reads`.
struct ReadBody: Decodable {
    var app: String
    /// The user who read: deliveries' `recipient` label.
    var recipient: String
    /// The conversation read: deliveries' `thread` label.
    var thread: String
    /// Read up to this time (RFC 3339): every message sent at or before it.
    var upTo: String?
    /// Read up to this message: those sent before it, and it.
    var upToReference: String?
    /// The token of the device the user read on: not pushed.
    var reader: String?
    /// The app icon's badge the pushes set.
    var badge: Int?
    /// The account read in; absent: the app's only account.
    var account: String?
    /// What a retraction takes and a read does not: refused by name, not ignored.
    var mode: String?
    var reason: String?
    var dryRun: Bool?

    /// The first field given that a retraction takes and a read does not, and why.
    var retractionField: (field: String, problem: String)? {
        if mode != nil { return ("mode", "a read is always a silent background push") }
        if reason != nil { return ("reason", "a read is not audited: it has no reason to keep") }
        if dryRun != nil { return ("dryRun", "a read has no dry run") }
        return nil
    }
}

struct ReadTakenView: Encodable {
    /// Lowercase: the id the device feed lists the read under.
    var id: String
    var app: String
    var account: String?
    /// The recipient's devices told to remove something.
    var devices: Int
    /// Their deliveries taken.
    var deliveries: Int
    /// The point read up to, as a time: for `upToReference`, when it was sent.
    var upTo: Date?
}
