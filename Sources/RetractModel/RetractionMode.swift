import RetractKit

/// How a retraction reaches a phone (docs/payload.md, "Delivery modes").
package enum RetractionMode: String, Hashable, Sendable, Codable, CaseIterable {
    /// A silent background push (`content-available`) the app handles with
    /// RetractKit. iOS budgets these, and drops them for a force-quit app.
    case background
    /// A `mutable-content` alert carrying the same custom data: iOS runs the
    /// app's Notification Service Extension for it even after a force-quit,
    /// and RetractKit's helper there removes the originals and hides the carrier.
    case serviceExtension = "service-extension"
    /// An alert with the original's collapse id and the app's retraction
    /// text: iOS shows it in the original's place, with no app code at all.
    case replace

    /// The modes as the CLI and the API spell them, for messages.
    package static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The text an app's alerts show when it sets none.
    package static let defaultText = RetractionServiceExtension.defaultRetractionText

    /// The longest retraction text, in UTF-8 bytes (the ledger checks the same).
    package static let maximumTextBytes = 1024

    /// The account that takes the most room in a body: the longest, every
    /// character one JSON escapes.
    static let longestAccount = String(repeating: "\\", count: AccountName.maximumLength)

    /// The largest badge a push may set.
    package static let maximumBadge = Int(Int32.max)

    /// The smallest retraction body any transport carries: FCM's
    /// (`FCMMessage.bodyLimit`; a test checks they agree).
    package static let smallestBodyLimit = 2600

    /// What is wrong with `text` as an app's retraction text, or nil: it must
    /// fit, with the longest reference and account and the largest badge, in
    /// a push of any transport.
    package static func problem(withText text: String) -> String? {
        if text.isEmpty || text.allSatisfy(\.isWhitespace) { return "the retraction text must not be empty" }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" && $0 != "\t" || $0.value == 0x7F }) {
            return "the retraction text must not hold control characters (line breaks and tabs are fine)"
        }
        if text.utf8.count > maximumTextBytes {
            return "the retraction text is \(text.utf8.count) bytes; at most \(maximumTextBytes) fit in a push"
        }
        let longest = ReferenceID(String(repeating: "r", count: Delivery.maximumReferenceLength))
        let aps = RetractionAPS.alert(text, mutableContent: true, badge: maximumBadge)
        do {
            _ = try PayloadBuilder(account: longestAccount).retractionBodies(for: [longest], limit: smallestBodyLimit, aps: aps)
            return nil
        } catch {
            return "the retraction text makes too large a push (\(error)); shorten it"
        }
    }

    /// What is wrong with an edit of `reference`, by field (`title`,
    /// `body`), or nil: each as a retraction text is checked (no control
    /// characters, at most ``maximumTextBytes``; a body not empty), and the
    /// edit's largest push, a service-extension alert under the longest
    /// thread, must fit the smallest body (FCM's).
    package static func problem(withEdit edit: NotificationEdit, reference: ReferenceID, account: String? = nil) -> FieldProblem? {
        for (field, text) in [("title", edit.title), ("body", edit.body)] {
            guard let text, let problem = problem(withText: text) else { continue }
            return FieldProblem(field, problem.replacingOccurrences(of: "the retraction text", with: "the \(field)"))
        }
        let thread = AccountScope.identifier(of: String(repeating: "t", count: DeliveryLabels.maximumLength), account: account)
        let aps = RetractionAPS.alert(title: edit.title, body: edit.body, mutableContent: true, thread: thread)
        do {
            _ = try PayloadBuilder(account: account).editBody(for: reference, edit: edit, limit: smallestBodyLimit, aps: aps)
            return nil
        } catch {
            return FieldProblem("body", "the edit makes too large a push (\(error)); shorten the title or the body")
        }
    }
}
