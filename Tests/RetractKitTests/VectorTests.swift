import Foundation
import PayloadVectors
import RetractKit
import Testing

/// Every case of Tests/Vectors/payloads.json, through the handler an app calls.
@Suite("Payload vectors")
struct VectorTests {
    @Test(arguments: try PayloadVectors.load().cases)
    func payloadVector(_ vector: PayloadVectors.Case) async throws {
        let push = try userInfo(vector.pushJSON)
        let all = try #require(try JSONSerialization.jsonObject(with: Data(vector.deliveredJSON.utf8)) as? [[String: Any]])
        // An Android conversation notification goes by its messages, as RetractKit for Android keeps it; the rest through the handler.
        let conversations = all.compactMap { ($0["conversation"] as? [String: Any]).map(Self.conversation) }
        let delivered = all.filter { $0["conversation"] == nil }
        let showing = delivered.map { notification in
            // An Android phone's notification, as RetractKit for Android matches it (`retract match` reads both).
            guard let identifier = notification["identifier"] as? String else {
                return DeliveredNotification(
                    androidTag: notification["tag"] as? String, id: notification["id"] as? Int ?? 0,
                    extras: notification["extras"] as? [AnyHashable: Any] ?? [:], group: notification["group"] as? String)
            }
            return DeliveredNotification(
                identifier: identifier, userInfo: notification["userInfo"] as? [AnyHashable: Any] ?? [:],
                threadIdentifier: notification["threadIdentifier"] as? String)
        }
        let center = InMemoryNotificationCenter(delivered: showing)
        let reading = RetractPayload.read(push)
        let report = await RetractionHandler(center: center).handle(reading)
        var removedConversations: [String] = []
        var rebuilt: [PayloadVectors.Rebuilt] = []
        var editedConversations: [String] = []
        for conversation in conversations {
            var after: AndroidConversation? = conversation
            var edited = false
            if let references = reading.retraction {
                after = conversation.retracted(by: references, threads: reading.retractedThreads, account: reading.account)
            } else if let edit = report.edit?.edit, conversation.holds(anyOf: edit.references, account: edit.account) {
                after = conversation.edited(by: edit.references, account: edit.account, text: edit.body)
                edited = true
                editedConversations.append(conversation.tag)
            }
            guard let after else {
                removedConversations.append(conversation.tag)
                continue
            }
            if after != conversation || edited {
                rebuilt.append(
                    .init(name: after.tag, messages: after.messages.map { .init(reference: $0.reference.rawValue, text: $0.text) }))
            }
        }
        #expect(reading.account == vector.account)
        #expect(reading.badge == vector.badge)
        #expect(report.account == (reading.retraction == nil ? nil : vector.account))
        #expect(rebuilt.sorted { $0.name < $1.name } == vector.rebuilt.sorted { $0.name < $1.name })

        #expect((report.outcome != .notARetraction) == vector.retraction)
        // An edit's references are what it edits.
        let references = report.edit?.edit.references ?? report.references
        #expect(references.map(\.rawValue).sorted() == vector.references.sorted())
        #expect(report.threads.sorted() == vector.threads.sorted())
        #expect((report.outcome.identifiers + removedConversations).sorted() == vector.remove.sorted())
        #expect(Set(center.delivered.map(\.identifier)) == Set(showing.map(\.identifier)).subtracting(vector.remove))
        #expect(report.diagnostics.compactMap(\.key).sorted() == vector.diagnostics.sorted())
        #expect(report.diagnostics.count == vector.diagnostics.count)
        let edit = report.edit.map { PayloadVectors.Edit(title: $0.edit.title, body: $0.edit.body) }
        #expect(edit == vector.edit)
        #expect(((report.edit?.edited ?? []) + editedConversations).sorted() == vector.edited.sorted())
        if let edit = vector.edit {
            // What was edited shows the new text, the title kept where the edit brings none; the rest is untouched.
            for shown in center.delivered {
                let before = showing.first { $0.identifier == shown.identifier }
                if vector.edited.contains(shown.identifier) {
                    #expect(shown.body == edit.body)
                    #expect(shown.title == (edit.title ?? before?.title))
                } else {
                    #expect(shown == before)
                }
            }
        }

        // The app delegate's one call gives the same outcome.
        let again = InMemoryNotificationCenter(delivered: showing)
        #expect(await RetractionHandler(center: again).handle(userInfo: push) == report.outcome)
    }
}

extension VectorTests {
    /// A case's `"conversation"`, as the file writes it.
    static func conversation(_ object: [String: Any]) -> AndroidConversation {
        let messages = (object["messages"] as? [[String: Any]] ?? []).map { message in
            let reference = message["reference"].map { ($0 as? String) ?? "\($0)" } ?? ""
            return AndroidConversation.Message(reference: ReferenceID(reference), text: message["text"] as? String ?? "")
        }
        return AndroidConversation(account: object["account"] as? String, thread: object["thread"] as? String ?? "", messages: messages)
    }
}

extension PayloadVectors.Case: CustomTestStringConvertible {
    public var testDescription: String { name }
}
