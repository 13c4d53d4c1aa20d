import Foundation
import RetractKit

/// How the ledger keeps an account's references and labels apart, where one
/// app on a phone holds several accounts (servers, workspaces, users) that
/// number their messages alike (docs/ledger.md, "Accounts").
///
/// A reference or label of an account is kept as U+001F, the account,
/// U+001F, then the value; one of no account (the app's only one) as the
/// value itself, as before accounts existed. No reference, label or account
/// holds a control character (each is checked as it comes in), so the two
/// forms never meet, and every index and statement that finds a reference
/// finds it within its account: account A's message 233 and account B's are
/// two references to the ledger. The scoped form is made at the engine's
/// doors (recording, sending, retracting) and read back where a reference
/// leaves the ledger: in pushes, views and the device feed.
package enum LedgerScope {
    private static let mark: Character = "\u{1F}"

    /// The ledger's form of `value` within `account`.
    package static func key(_ value: String, account: String?) -> String {
        guard let account else { return value }
        return String(mark) + account + String(mark) + value
    }

    /// The account and the value of a ledger key.
    package static func split(_ key: String) -> (account: String?, value: String) {
        guard key.first == mark, let end = key.dropFirst().firstIndex(of: mark) else { return (nil, key) }
        return (String(key[key.index(after: key.startIndex)..<end]), String(key[key.index(after: end)...]))
    }

    package static func reference(_ reference: ReferenceID, account: String?) -> ReferenceID {
        ReferenceID(key(reference.rawValue, account: account))
    }

    /// The references as the ledger keeps them within `account`.
    package static func references(_ references: [ReferenceID], account: String?) -> [ReferenceID] {
        account == nil ? references : references.map { reference($0, account: account) }
    }

    /// Every label given, within `account`.
    package static func labels(_ labels: DeliveryLabels, account: String?) -> DeliveryLabels {
        guard account != nil else { return labels }
        var scoped = labels
        for (kind, value) in labels.given { scoped[kind] = key(value, account: account) }
        return scoped
    }

    /// A retraction's target within `account`: its references, or its selector's label.
    package static func target(_ target: RetractionTarget, account: String?) -> RetractionTarget {
        guard account != nil else { return target }
        switch target {
        case .references(let references): return .references(Self.references(references, account: account))
        case .selector(var selector):
            selector.value = key(selector.value, account: account)
            return .selector(selector)
        }
    }

    /// The account of a ledger key, and the reference as the app names it.
    package static func split(_ reference: ReferenceID) -> (account: String?, reference: ReferenceID) {
        let (account, value) = split(reference.rawValue)
        return (account, account == nil ? reference : ReferenceID(value))
    }

    /// The value of a ledger key as the app names it.
    package static func value(_ key: String) -> String { split(key).value }

    /// A ledger key as a person reads it, in logs, the audit log and the
    /// console: `233`, or `233 (account acme)` for an account's.
    package static func shown(_ key: String) -> String {
        let (account, value) = split(key)
        return account.map { "\(value) (account \($0))" } ?? value
    }
}

/// What an account name may be.
package enum AccountName {
    /// The longest account, in UTF-8 bytes.
    package static let maximumLength = 64

    /// What is wrong with `account`, or nil: 1 to 64 bytes, no control characters.
    package static func problem(with account: String) -> String? {
        if account.isEmpty { return "an account must not be empty" }
        if account.utf8.count > maximumLength { return "\(account.utf8.count) bytes; an account has at most \(maximumLength)" }
        if account.containsControlCharacters { return "an account cannot hold control characters" }
        return nil
    }
}
