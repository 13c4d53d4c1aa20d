/// How a notification's system identifiers name an account's reference or
/// thread, where one app on a phone holds several accounts: its collapse id
/// (an iPhone's request identifier), its Android tag, its `aps.thread-id`
/// and its Android group. The same message number of two accounts must not
/// take each other's place, nor be found by each other's retraction.
///
/// With no account, the identifier is the value itself, as before accounts
/// existed. With one, it is the account, `/`, then the value, with `%` and
/// `/` in the account written `%25` and `%2F`, so that no two accounts'
/// identifiers are alike: account `acme.zulipchat.com`, reference `233` is
/// `acme.zulipchat.com/233`. RetractKit for Android writes the same
/// (`RetractTags`).
public enum AccountScope {
    /// The identifier of `value` (a reference or a thread) within `account`.
    public static func identifier(of value: String, account: String?) -> String {
        guard let account else { return value }
        var escaped = ""
        for character in account.unicodeScalars {
            switch character {
            case "%": escaped += "%25"
            case "/": escaped += "%2F"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped + "/" + value
    }

    /// The identifier of `reference` within `account`.
    public static func identifier(of reference: ReferenceID, account: String?) -> String {
        identifier(of: reference.rawValue, account: account)
    }
}
