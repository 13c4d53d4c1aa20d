/// What ``RetractionHandler`` did with a push.
public enum RetractionOutcome: Hashable, Sendable {
    /// The push is not a retraction; nothing was looked at.
    case notARetraction
    /// A retraction, but nothing showing matched it.
    case noMatch
    /// These notifications were removed: Notification Center no longer
    /// lists them.
    case removed([String])
    /// Their removal was asked for, but Notification Center still listed
    /// some of them when the wait for it ended
    /// (``RetractionHandler/defaultRemovalWait``). iOS removes delivered
    /// notifications later, on a queue of its own, and drops that work if
    /// the process ends first; a later push, or the catch-up at launch,
    /// tries again.
    case notConfirmed([String])
}

extension RetractionOutcome {
    /// The notifications a removal was asked for: those of `removed` or
    /// `notConfirmed`, none otherwise.
    public var identifiers: [String] {
        switch self {
        case .removed(let identifiers), .notConfirmed(let identifiers): identifiers
        case .notARetraction, .noMatch: []
        }
    }

    /// One outcome for two removals made for one push (the push's own and
    /// the feed's): confirmed only when both are.
    func merged(with other: RetractionOutcome) -> RetractionOutcome {
        let identifiers = self.identifiers + other.identifiers.filter { !self.identifiers.contains($0) }
        switch (self, other) {
        case (.notConfirmed, _), (_, .notConfirmed): return .notConfirmed(identifiers)
        case (.removed, _), (_, .removed): return .removed(identifiers)
        case (.noMatch, _), (_, .noMatch): return .noMatch
        case (.notARetraction, .notARetraction): return .notARetraction
        }
    }
}

/// What ``RetractionHandler`` did with a push, and what it could not read.
public struct RetractionReport: Hashable, Sendable {
    public var outcome: RetractionOutcome
    /// The references the push retracted; empty when it is not a retraction.
    public var references: Set<ReferenceID>
    /// The conversations the push retracted (``RetractPayload/Reading/retractedThreads``).
    public var threads: Set<String>
    /// The account they are of (``RetractPayload/Reading/account``); nil: the app's only account.
    public var account: String?
    /// Values of the push that could not be read and were left out
    /// (``RetractPayload/Reading/diagnostics``).
    public var diagnostics: [RetractPayloadError]
    /// What reading the device feed did, when the push said the rest is
    /// there (``NotificationCustomData/moreInFeed``); `notConfigured` when
    /// the handler has no feed or the push did not ask.
    public var catchUp: RetractionServiceExtension.FeedCatchUp.Outcome = .notConfigured
    /// What an edit push changed; nil for any other push. Its
    /// ``outcome`` is then ``RetractionOutcome/notARetraction``.
    public var edit: EditReport?

    public init(
        outcome: RetractionOutcome, references: Set<ReferenceID> = [], threads: Set<String> = [], account: String? = nil,
        diagnostics: [RetractPayloadError] = []
    ) {
        self.outcome = outcome
        self.references = references
        self.threads = threads
        self.account = account
        self.diagnostics = diagnostics
    }
}

/// What an edit push (``RetractPayload/Reading/edit``) changed on the device.
public struct EditReport: Hashable, Sendable {
    public var edit: RetractPayload.Edit
    /// The notifications that now show the new text; none when the original
    /// no longer shows (the user dismissed it).
    public var edited: [String]
    /// Whether one of its references was retracted on this device (a
    /// tombstone): then nothing was edited.
    public var wasRetracted: Bool

    public init(edit: RetractPayload.Edit, edited: [String], wasRetracted: Bool = false) {
        self.edit = edit
        self.edited = edited
        self.wasRetracted = wasRetracted
    }
}
