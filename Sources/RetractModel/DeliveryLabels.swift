import Foundation

/// What a delivery may carry besides its reference, each the app's own id:
/// what a retraction by selector selects on (docs/ledger.md, "Delivery labels").
package struct DeliveryLabels: Hashable, Sendable {
    /// The conversation the message belongs to; `send` writes it as `aps.thread-id`.
    package var thread: String?
    /// Who wrote it.
    package var sender: String?
    /// The user the device belongs to.
    package var recipient: String?
    /// A campaign label.
    package var campaign: String?

    package init(thread: String? = nil, sender: String? = nil, recipient: String? = nil, campaign: String? = nil) {
        self.thread = thread
        self.sender = sender
        self.recipient = recipient
        self.campaign = campaign
    }

    package var isEmpty: Bool { self == DeliveryLabels() }

    package subscript(kind: RetractionSelector.Kind) -> String? {
        get {
            switch kind {
            case .thread: thread
            case .sender: sender
            case .recipient: recipient
            case .campaign: campaign
            }
        }
        set {
            switch kind {
            case .thread: thread = newValue
            case .sender: sender = newValue
            case .recipient: recipient = newValue
            case .campaign: campaign = newValue
            }
        }
    }

    /// The labels given, in ``RetractionSelector/Kind`` order.
    package var given: [(kind: RetractionSelector.Kind, value: String)] {
        RetractionSelector.Kind.allCases.compactMap { kind in self[kind].map { (kind, $0) } }
    }

    /// The longest label the ledger keeps, in UTF-8 bytes.
    package static let maximumLength = 256

    /// What is wrong with `value` as a label, or nil: 1 to 256 bytes, no control characters.
    package static func problem(with value: String) -> String? {
        if value.isEmpty { return "must not be empty" }
        if value.utf8.count > maximumLength { return "\(value.utf8.count) bytes; at most \(maximumLength)" }
        if value.containsControlCharacters { return "cannot hold control characters" }
        return nil
    }

    /// The first label that is not fit to keep, as (field, problem).
    package var problem: (field: String, problem: String)? {
        for (kind, value) in given {
            if let problem = Self.problem(with: value) { return (kind.rawValue, problem) }
        }
        return nil
    }

    /// ``problem`` of labels as the ledger keeps them, each maybe within an account (``LedgerScope``).
    package var ledgerProblem: (field: String, problem: String)? {
        for (kind, value) in given {
            let (account, plain) = LedgerScope.split(value)
            if let problem = Self.problem(with: plain) ?? account.flatMap(AccountName.problem) { return (kind.rawValue, problem) }
        }
        return nil
    }
}
