/// What ``RetractionHandler`` did with a push.
public enum RetractionOutcome: Hashable, Sendable {
    /// The push is not a retraction; nothing was looked at.
    case notARetraction
    /// A retraction, but nothing showing matched it.
    case noMatch
    /// These notifications were removed.
    case removed([String])
}

/// What ``RetractionHandler`` did with a push, and what it could not read.
public struct RetractionReport: Hashable, Sendable {
    public var outcome: RetractionOutcome
    /// The references the push retracted; empty when it is not a retraction.
    public var references: Set<ReferenceID>
    /// The conversations the push retracted (``RetractPayload/Reading/retractedThreads``).
    public var threads: Set<String>
    /// Values of the push that could not be read and were left out
    /// (``RetractPayload/Reading/diagnostics``).
    public var diagnostics: [RetractPayloadError]
    /// What reading the device feed did, when the push said the rest is
    /// there (``NotificationCustomData/moreInFeed``); `notConfigured` when
    /// the handler has no feed or the push did not ask.
    public var catchUp: RetractionServiceExtension.FeedCatchUp.Outcome = .notConfigured

    public init(
        outcome: RetractionOutcome, references: Set<ReferenceID> = [], threads: Set<String> = [], diagnostics: [RetractPayloadError] = []
    ) {
        self.outcome = outcome
        self.references = references
        self.threads = threads
        self.diagnostics = diagnostics
    }
}
