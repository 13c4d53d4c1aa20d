import Foundation
import Hummingbird
import RetractCore
import RetractModel

// Retracting many notifications at once from the console: every notification
// of a thread, sender, recipient or campaign, within a time range, through
// the same dry run, confirm step and audit entry as one reference.
extension Console {
    struct RetractManyPage: Sendable {
        var session: SessionView
        var apps: [AppOption]
        var kinds: [ConsoleMode.Option]
        var value: String
        var sentAfter: String
        var sentBefore: String
        var modes: [ConsoleMode.Option]
    }

    /// `GET /console/retract-many`: the form, filled from the query (the
    /// notification list's "retract this campaign" links fill it).
    func retractMany(_ request: Request, _ signedIn: ConsoleSessions.SignedIn) async throws -> Response {
        try signedIn.caller.require(.retract)
        let parameters = request.uri.queryParameters
        func given(_ name: String) -> String { parameters.get(name)?.trimmingCharacters(in: .whitespaces) ?? "" }
        let apps = try await visibleApps(signedIn)
        let chosen = apps.first { $0.name == given("app") }
        let kind = RetractionSelector.Kind(rawValue: given("by")) ?? .campaign
        var session = SessionView(signedIn)
        session.onRetractMany = true
        return pages.render(
            "retract-many",
            RetractManyPage(
                session: session, apps: apps.map { AppOption(name: $0.name, selected: $0.id == chosen?.id) },
                kinds: RetractionSelector.Kind.allCases.map { .init(value: $0.rawValue, label: $0.rawValue, selected: $0 == kind) },
                value: given("value"), sentAfter: given("sentAfter"), sentBefore: given("sentBefore"),
                modes: ConsoleMode.options(default: chosen?.retractionMode)))
    }
}

/// What a console form retracts, checked, with the texts it was given: the
/// confirm step posts exactly them again, so what is retracted is what the
/// dry run counted (save what is sent in between, when no end is given).
///
/// The fields: `reference`; or `by` (thread, sender, recipient or
/// campaign), `value`, and optionally `sentAfter` and `sentBefore`, times
/// in UTC as a `datetime-local` input gives them.
struct ConsoleTarget: Sendable {
    struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    var target: RetractionTarget
    /// The account its reference or label is of: the links carry the ledger's keys (``LedgerScope``).
    var account: String?
    /// The form fields that name it, for the confirm form's hidden inputs.
    var fields: [Field]

    init(_ form: [String: String], now: Date = Date()) throws(APIProblem) {
        func given(_ name: String) -> String { form[name]?.trimmingCharacters(in: .whitespaces) ?? "" }
        let by = given("by")
        guard !by.isEmpty else {
            let key = try Validate.ledgerKey(form["reference"] ?? "", field: "reference")
            let reference = try Validate.reference(key.value, field: "reference")
            target = .references([reference])
            account = key.account
            fields = [Field(name: "reference", value: form["reference"] ?? "")]
            return
        }
        guard let kind = RetractionSelector.Kind(rawValue: by) else {
            let kinds = RetractionSelector.Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw APIProblem.invalid("Retract by", "\"\(by.prefix(40))\" is not one of \(kinds)")
        }
        if !given("reference").isEmpty {
            throw APIProblem.invalid("reference", "name one reference or a \(kind.rawValue), not both")
        }
        // The label as a delivery was recorded with it: not trimmed.
        let value = form["value"] ?? ""
        let key = try Validate.ledgerKey(value, field: kind.rawValue)
        account = key.account
        let sentAfter = given("sentAfter")
        let sentBefore = given("sentBefore")
        let selector = RetractionSelector(
            kind, key.value,
            sentAfter: sentAfter.isEmpty ? nil : try Console.inputTime(sentAfter, field: "Sent after"),
            sentBefore: sentBefore.isEmpty ? nil : try Console.inputTime(sentBefore, field: "Sent before"))
        do {
            target = try RetractionTarget(references: [], selector: selector, now: now)
        } catch {
            let label = ["sentAfter": "Sent after", "sentBefore": "Sent before"][error.field] ?? error.field
            throw APIProblem.invalid(label, error.message)
        }
        fields = [
            Field(name: "by", value: kind.rawValue), Field(name: "value", value: value), Field(name: "sentAfter", value: sentAfter),
            Field(name: "sentBefore", value: sentBefore),
        ]
    }

    /// What it takes, as the confirm page asks it, in three parts: `m-1`
    /// alone, or `every notification of campaign`, `spring`, `sent since
    /// 2026-11-26 13:45:00 UTC, up to when you confirm`.
    var description: (lead: String, value: String, range: String) {
        switch target {
        case .references(let references):
            let shown = references.map { Console.shownKey(LedgerScope.key($0.rawValue, account: account)) }
            return ("", shown.joined(separator: ", "), "")
        case .selector(let selector):
            let range =
                switch (selector.sentAfter, selector.sentBefore) {
                case (let after?, let before?): "sent between \(ConsoleTime.text(after)) and \(ConsoleTime.text(before)) UTC"
                case (let after?, nil): "sent since \(ConsoleTime.text(after)) UTC, up to when you confirm"
                case (nil, let before?): "sent before \(ConsoleTime.text(before)) UTC"
                case (nil, nil): "ever sent, up to when you confirm"
                }
            return (
                "every notification of \(selector.kind.rawValue)", Console.shownKey(LedgerScope.key(selector.value, account: account)),
                range
            )
        }
    }

    /// Where the confirm page's "Cancel" goes: the notification, or the form again as it was filled.
    func back(app: String) -> String {
        switch target {
        case .references(let references):
            return ConsoleLinks.notification(app: app, reference: LedgerScope.key(references.first?.rawValue ?? "", account: account))
        case .selector:
            return ConsoleLinks.retractMany(app: app, fields: fields)
        }
    }
}
