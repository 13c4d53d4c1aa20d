/// A conversation notification on an Android phone, as RetractKit for
/// Android keeps and matches it (`Conversation` in clients/android): one
/// notification per conversation holding its last messages, Android's
/// `MessagingStyle`. iPhones show no such notification; this is for tools
/// that check both clients against the same cases, such as `retract match`.
package struct AndroidConversation: Hashable, Sendable {
    package struct Message: Hashable, Sendable {
        package var reference: ReferenceID
        package var text: String
        package var sender: String?

        package init(reference: ReferenceID, text: String, sender: String? = nil) {
            self.reference = reference
            self.text = text
            self.sender = sender
        }
    }

    /// The account it is of; nil: the app's only account.
    package var account: String?
    package var thread: String
    package var messages: [Message]

    /// Its last `maximumMessages` messages are kept, as the library keeps them.
    package init(account: String?, thread: String, messages: [Message]) {
        self.account = account
        self.thread = thread
        self.messages = Array(messages.suffix(Self.maximumMessages))
    }

    /// The most messages one holds (`Conversation.MAXIMUM_MESSAGES`, MessagingStyle's).
    package static let maximumMessages = 25

    /// Whether it holds a message of one of `references` of `account`: what an edit re-posts.
    package func holds(anyOf references: Set<ReferenceID>, account: String?) -> Bool {
        self.account == account && messages.contains { references.contains($0.reference) }
    }

    /// The tag it is posted under (id 0): `conversation:` and its thread's
    /// ``AccountScope`` identifier (a message's reference should not start so).
    package var tag: String { "conversation:" + AccountScope.identifier(of: thread, account: account) }

    /// What a retraction of `references` and `threads` of `account` leaves
    /// of it: nil when it goes whole (its thread is retracted, or none of its
    /// messages is left), else it without the retracted messages (itself
    /// when it holds none). Another account's retraction leaves it as it is.
    package func retracted(by references: Set<ReferenceID>, threads: Set<String>, account: String?) -> AndroidConversation? {
        guard self.account == account else { return self }
        if threads.contains(thread) { return nil }
        var left = self
        left.messages.removeAll { references.contains($0.reference) }
        if left.messages.count == messages.count { return self }
        return left.messages.isEmpty ? nil : left
    }

    /// It with the messages of `references` of `account` saying `text`.
    package func edited(by references: Set<ReferenceID>, account: String?, text: String) -> AndroidConversation {
        guard self.account == account else { return self }
        var edited = self
        for index in edited.messages.indices where references.contains(edited.messages[index].reference) {
            edited.messages[index].text = text
        }
        return edited
    }
}
