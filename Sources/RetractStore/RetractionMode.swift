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

    /// What is wrong with `text` as an app's retraction text, or nil.
    package static func problem(withText text: String) -> String? {
        if text.isEmpty || text.allSatisfy(\.isWhitespace) { return "the retraction text must not be empty" }
        if text.unicodeScalars.contains(where: { $0.value == 0 }) { return "the retraction text must not hold the NUL character" }
        if text.utf8.count > maximumTextBytes {
            return "the retraction text is \(text.utf8.count) bytes; at most \(maximumTextBytes) fit in a push"
        }
        return nil
    }
}
