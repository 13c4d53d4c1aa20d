/// What ``RetractionHandler`` did with a push.
public enum RetractionOutcome: Hashable, Sendable {
    /// The push is not a retraction; nothing was looked at.
    case notARetraction
    /// A retraction, but nothing showing matched it.
    case noMatch
    /// These notifications were removed.
    case removed([String])
}
