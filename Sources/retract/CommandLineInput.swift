import ArgumentParser
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore

extension ReferenceID {
    /// A reference given on the command line, checked as every reference
    /// from outside is; `name` (`--reference`) names it in the error.
    init(argument text: String, name: String) throws(RetractError) {
        do {
            try self.init(validating: text, field: name)
        } catch {
            throw RetractError(error)
        }
    }
}

extension Date {
    /// A time given on the command line (`flag` names it in the error): ISO 8601 with a zone, such as 2026-11-23T10:00:00Z.
    init(argument text: String, flag: String) throws(RetractError) {
        guard let date = ISO8601DateFormatter().date(from: text) else {
            throw RetractError(
                .invalidInput, "\(flag) \"\(text.prefix(80))\" is not an ISO 8601 time such as 2026-11-23T10:00:00Z", field: flag)
        }
        self = date
    }
}

extension RetractError {
    /// This error with its field named as the command line names it
    /// (`sentAt` as `--sent-at`), when `flags` has that field.
    func naming(_ flags: [String: String]) -> RetractError {
        renamingField { flags[$0] ?? $0 }
    }
}

/// What a delivery may carry besides its reference: `retract record` and
/// `retract send` take them, and a retraction can select on each.
struct LabelOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The conversation it belongs to; send writes it as aps.thread-id.", valueName: "ID"))
    var thread: String?

    @Option(help: ArgumentHelp("Who wrote it (your own user id).", valueName: "ID"))
    var sender: String?

    @Option(help: ArgumentHelp("The user the devices belong to (your own user id).", valueName: "ID"))
    var recipient: String?

    @Option(help: ArgumentHelp("A campaign label.", valueName: "LABEL"))
    var campaign: String?

    var labels: DeliveryLabels {
        DeliveryLabels(thread: thread, sender: sender, recipient: recipient, campaign: campaign)
    }

    /// The flag of each label, for naming one in an error.
    static let flags = Dictionary(uniqueKeysWithValues: RetractionSelector.Kind.allCases.map { ($0.rawValue, "--\($0.rawValue)") })
}

/// The account a delivery, a send, a retraction or an edit is of, where one
/// app on a phone holds several (docs/api.md, "Accounts").
struct AccountOption: ParsableArguments {
    @Option(
        name: .customLong("account"),
        help: ArgumentHelp(
            "The account it is of, where one app on a phone holds several (servers, workspaces); none: the app's only account.",
            valueName: "ACCOUNT"))
    var account: String?
}
