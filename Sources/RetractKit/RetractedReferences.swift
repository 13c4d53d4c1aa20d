/// References retracted, each within its account: what the device feed and
/// the tombstones name, where one app on a phone may hold several accounts.
/// An array literal is references of the app's only account (no account).
public struct RetractedReferences: Hashable, Sendable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// By account; nil is the app's only account. No set is empty.
    public private(set) var byAccount: [String?: Set<ReferenceID>]

    /// None.
    public init() {
        byAccount = [:]
    }

    public init(_ references: some Sequence<ReferenceID>, account: String? = nil) {
        byAccount = [:]
        insert(references, account: account)
    }

    public init(arrayLiteral references: ReferenceID...) {
        self.init(references)
    }

    /// Adds `references` of `account`.
    public mutating func insert(_ references: some Sequence<ReferenceID>, account: String?) {
        var set = byAccount[account] ?? []
        set.formUnion(references)
        if !set.isEmpty { byAccount[account] = set }
    }

    public mutating func formUnion(_ other: RetractedReferences) {
        for (account, references) in other.byAccount { insert(references, account: account) }
    }

    public var isEmpty: Bool { byAccount.isEmpty }

    /// The references of `account` (nil: the app's only account).
    public func references(of account: String?) -> Set<ReferenceID> {
        byAccount[account] ?? []
    }

    /// The accounts named, the app's only account (nil) first, then by name.
    public var accounts: [String?] {
        byAccount.keys.sorted { lhs, rhs in
            switch (lhs, rhs) {
            case (nil, _): rhs != nil
            case (_, nil): false
            case (let lhs?, let rhs?): lhs < rhs
            }
        }
    }

    /// Whether a retraction of these references removes `notification`
    /// (``DeliveredNotification/isRetracted(by:threads:account:)``).
    public func names(_ notification: DeliveredNotification) -> Bool {
        byAccount.contains { account, references in notification.isRetracted(by: references, account: account) }
    }

    /// Whether one of `references` of `account` is among them.
    public func contains(anyOf references: Set<ReferenceID>, account: String?) -> Bool {
        !references.isDisjoint(with: self.references(of: account))
    }

    public var description: String {
        accounts.map { account in
            let list = references(of: account).sorted().map(\.rawValue).joined(separator: ", ")
            return account.map { "\($0): [\(list)]" } ?? "[\(list)]"
        }.joined(separator: " ")
    }
}
