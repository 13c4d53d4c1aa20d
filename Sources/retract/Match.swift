import ArgumentParser
import Foundation
import RetractKit

/// `retract match`: what a device would remove when a push arrives, computed
/// with the same RetractKit code an app runs.
struct Match: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a device would remove for a push.",
        discussion: """
            PUSH is the push's userInfo (a JSON object), or an FCM message's data map. DELIVERED is an array \
            of the notifications showing on the device, each either an iPhone's, {"identifier": "...", \
            "userInfo": {...}, "threadIdentifier": "..."} (threadIdentifier, optional, is the request's; else \
            aps.thread-id is read), or an Android phone's, {"tag": "...", "id": 0, "extras": {...}, "group": \
            "...", "channel": "..."} (StatusBarNotification's tag and id, the notification's extras, group \
            and channel id; one of tag and id is needed), matched as RetractKit for Android matches it: by \
            its tag, the custom data in its extras, and its group as its conversation. An Android \
            notification is listed by its tag, tag#id when its id is not 0, #id without a tag. An Android \
            conversation notification (RetractKit for Android's MessagingStyle model) adds "conversation": \
            {"thread": "...", "account": "...", "messages": [{"reference": "...", "text": "...", "sender": "..."}]} \
            (account and sender optional; its tag, when given, is "conversation:" and the thread, within its \
            account). scripts/android-match takes the same files and prints the same.

            Prints one JSON object: {"retraction": true|false, "references": [...], "threads": [...], "remove": [...], \
            "diagnostics": [{"key": "...", "problem": "..."}]}. "account" follows "threads" when the push names one \
            (pushNotificationAccount). "rebuilt": [{"name": "...", "messages": [{"reference": "...", "text": "..."}]}] \
            follows "remove" when conversations were re-posted without some of their messages or with an edit's words. \
            For an edit (pushNotificationEdit), "references" are \
            what it edits, and "edit": {"title": "..."|null, "body": "..."}, "edited": [...] (what now shows the new \
            text) come before "diagnostics". A value a device cannot read is left out \
            and the rest of the push is read; each such value is a diagnostic, also printed on stderr.

            Exit codes: 0 done; 2 a file is missing, unreadable, not JSON or not of the expected shape.
            """
    )

    @Option(name: .customLong("push"), help: ArgumentHelp("The push's userInfo, a JSON object.", valueName: "PUSH.json"))
    var pushPath: String

    @Option(
        name: .customLong("delivered"),
        help: ArgumentHelp("The notifications showing, a JSON array.", valueName: "DELIVERED.json")
    )
    var deliveredPath: String

    func run() async throws {
        let userInfo: [String: Any]
        let delivered: [Delivered]
        do {
            userInfo = try readPush()
            delivered = try readDelivered()
        } catch {
            printError("retract match: \(error)")
            throw ExitCode(2)
        }

        let reading = RetractPayload.read(userInfo)
        for problem in reading.diagnostics {
            printError("retract match: warning: \(pushPath): \(problem)")
        }
        let center = InMemoryNotificationCenter(delivered: delivered.compactMap(\.notification))
        var report = await RetractionHandler(center: center).handle(reading)
        // Conversation notifications go by their messages, as RetractKit for Android takes them.
        var removed = report.outcome.identifiers
        var rebuilt: [AndroidConversation] = []
        // One notification per tag: a later one in the list takes an earlier one's place, as on a phone.
        var conversations: [AndroidConversation] = []
        for conversation in delivered.compactMap(\.conversation) {
            conversations.removeAll { $0.tag == conversation.tag }
            conversations.append(conversation)
        }
        for conversation in conversations {
            if let references = reading.retraction {
                guard let left = conversation.retracted(by: references, threads: reading.retractedThreads, account: reading.account) else {
                    removed.append(conversation.tag)
                    continue
                }
                if left != conversation { rebuilt.append(left) }
            } else if let edit = report.edit {
                guard conversation.holds(anyOf: edit.edit.references, account: edit.edit.account) else { continue }
                rebuilt.append(conversation.edited(by: edit.edit.references, account: edit.edit.account, text: edit.edit.body))
                report.edit?.edited.append(conversation.tag)
            }
        }
        print(
            MatchReport(
                isRetraction: report.outcome != .notARetraction,
                references: (report.edit?.edit.references ?? report.references).map(\.rawValue),
                threads: Array(report.threads),
                account: reading.account,
                removed: removed,
                rebuilt: rebuilt,
                edit: report.edit,
                diagnostics: report.diagnostics
            ).json
        )
    }

    /// One notification of the delivered list: one matching sees as it is, or an Android conversation.
    private enum Delivered {
        case single(DeliveredNotification)
        case conversation(AndroidConversation)

        var notification: DeliveredNotification? { if case .single(let notification) = self { notification } else { nil } }
        var conversation: AndroidConversation? { if case .conversation(let conversation) = self { conversation } else { nil } }
    }

    private func readPush() throws(InputFile.Problem) -> [String: Any] {
        let file = InputFile(path: pushPath)
        let json = try file.json()
        guard let object = json as? [String: Any] else {
            throw file.problem("expected a JSON object (the push's userInfo), found \(jsonKind(json))")
        }
        return object
    }

    private func readDelivered() throws(InputFile.Problem) -> [Delivered] {
        let file = InputFile(path: deliveredPath)
        let json = try file.json()
        guard let elements = json as? [Any] else {
            throw file.problem("expected a JSON array of {\"identifier\", \"userInfo\"}, found \(jsonKind(json))")
        }
        var delivered: [Delivered] = []
        for (index, element) in elements.enumerated() {
            guard let object = element as? [String: Any] else {
                throw file.problem("element \(index): expected an object, found \(jsonKind(element))")
            }
            if object["identifier"] == nil, object["tag"] != nil || object["id"] != nil {
                let at = "element \(index): "
                let notification = try androidNotification(object, file: file, at: at)
                if let conversation = object["conversation"] {
                    delivered.append(
                        .conversation(try androidConversation(conversation, tag: object["tag"] as? String, file: file, at: at)))
                } else {
                    delivered.append(.single(notification))
                }
                continue
            }
            guard let identifier = object["identifier"] as? String else {
                throw file.problem(
                    "element \(index): \"identifier\" must be a string (an iPhone's notification), or give \"tag\" and \"id\" (an Android one)"
                )
            }
            let userInfo = object["userInfo"] ?? [String: Any]()
            guard let userInfo = userInfo as? [String: Any] else {
                throw file.problem("element \(index): \"userInfo\" must be an object, found \(jsonKind(userInfo))")
            }
            let thread = object["threadIdentifier"]
            guard thread == nil || thread is String else {
                throw file.problem("element \(index): \"threadIdentifier\" must be a string, found \(jsonKind(thread!))")
            }
            delivered.append(
                .single(DeliveredNotification(identifier: identifier, userInfo: userInfo, threadIdentifier: thread as? String)))
        }
        return delivered
    }

    /// An Android conversation notification's `"conversation"`: its thread,
    /// account and messages, each message a reference and its text.
    private func androidConversation(
        _ value: Any, tag: String?, file: InputFile, at: String
    ) throws(InputFile.Problem) -> AndroidConversation {
        guard let object = value as? [String: Any] else {
            throw file.problem(at + "\"conversation\" must be an object, found \(jsonKind(value))")
        }
        guard let thread = object["thread"] as? String, !thread.isEmpty else {
            throw file.problem(at + "\"conversation.thread\" must be a non-empty string, found \(jsonKind(object["thread"] ?? NSNull()))")
        }
        let account = object["account"]
        guard account == nil || account is String else {
            throw file.problem(at + "\"conversation.account\" must be a string, found \(jsonKind(account!))")
        }
        guard let list = object["messages"] as? [Any] else {
            throw file.problem(at + "\"conversation.messages\" must be an array, found \(jsonKind(object["messages"] ?? NSNull()))")
        }
        var messages: [AndroidConversation.Message] = []
        for (index, element) in list.enumerated() {
            let message = element as? [String: Any]
            let reference = message?["reference"]
            let written =
                (reference as? String).flatMap { $0.isEmpty ? nil : $0 }
                ?? (reference.flatMap { isJSONBoolean($0) ? nil : $0 as? NSNumber }.flatMap { Int64(exactly: $0.doubleValue) }.map(
                    String.init))
            guard let written, let text = message?["text"] as? String, message?["sender"] == nil || message?["sender"] is String else {
                throw file.problem(
                    at + "\"conversation.messages[\(index)]\" must be an object with a \"reference\" (a string or an integer), "
                        + "a \"text\" (a string) and maybe a \"sender\" (a string)")
            }
            messages.append(AndroidConversation.Message(reference: ReferenceID(written), text: text, sender: message?["sender"] as? String))
        }
        let conversation = AndroidConversation(account: account as? String, thread: thread, messages: messages)
        if let tag, tag != conversation.tag {
            throw file.problem(at + "\"tag\" of a conversation must be \(JSONText.quoted(conversation.tag)), found \(JSONText.quoted(tag))")
        }
        return conversation
    }

    /// An Android notification: `{"tag", "id", "extras", "group", "channel"}`,
    /// matched as RetractKit for Android matches it.
    private func androidNotification(
        _ object: [String: Any], file: InputFile, at: String
    ) throws(InputFile.Problem) -> DeliveredNotification {
        let tag = object["tag"]
        guard tag == nil || tag is NSNull || tag is String else {
            throw file.problem(at + "\"tag\" must be a string or null, found \(jsonKind(tag!))")
        }
        var id = 0
        if let value = object["id"] {
            guard let number = value as? NSNumber, !isJSONBoolean(value), let exact = Int32(exactly: number.doubleValue) else {
                throw file.problem(at + "\"id\" must be an integer (a 32-bit notification id), found \(jsonKind(value))")
            }
            id = Int(exact)
        }
        let extras = object["extras"] ?? [String: Any]()
        guard let extras = extras as? [String: Any] else {
            throw file.problem(at + "\"extras\" must be an object, found \(jsonKind(extras))")
        }
        for key in ["group", "channel"] where object[key] != nil && !(object[key] is String) {
            throw file.problem(at + "\"\(key)\" must be a string, found \(jsonKind(object[key]!))")
        }
        return DeliveredNotification(androidTag: tag as? String, id: id, extras: extras, group: object["group"] as? String)
    }
}

/// The line `retract match` prints, keys in a fixed order.
struct MatchReport {
    var isRetraction: Bool
    var references: [String]
    var threads: [String]
    /// The account the push names; nil leaves `account` out of the line.
    var account: String? = nil
    var removed: [String]
    /// Conversations re-posted: their messages after the push, in order; none leaves `rebuilt` out.
    var rebuilt: [AndroidConversation] = []
    /// What an edit push changed; nil for any other push, whose line has no `edit` and `edited`.
    var edit: EditReport?
    var diagnostics: [RetractPayloadError]

    var json: String {
        func list(_ strings: [String]) -> String {
            "[" + strings.sorted().map(JSONText.quoted).joined(separator: ", ") + "]"
        }
        let problems = diagnostics.map { problem in
            #"{"key": \#(JSONText.quoted(problem.key ?? "")), "problem": \#(JSONText.quoted(problem.description))}"#
        }
        var edited = ""
        if let edit {
            let title = edit.edit.title.map(JSONText.quoted) ?? "null"
            edited = #""edit": {"title": \#(title), "body": \#(JSONText.quoted(edit.edit.body))}, "edited": \#(list(edit.edited)), "#
        }
        let named = account.map { #""account": \#(JSONText.quoted($0)), "# } ?? ""
        var conversations = ""
        if !rebuilt.isEmpty {
            let entries = rebuilt.sorted { $0.tag < $1.tag }.map { conversation in
                let messages = conversation.messages.map {
                    #"{"reference": \#(JSONText.quoted($0.reference.rawValue)), "text": \#(JSONText.quoted($0.text))}"#
                }
                return #"{"name": \#(JSONText.quoted(conversation.tag)), "messages": [\#(messages.joined(separator: ", "))]}"#
            }
            conversations = #""rebuilt": [\#(entries.joined(separator: ", "))], "#
        }
        return #"{"retraction": \#(isRetraction), "references": \#(list(references)), "threads": \#(list(threads)), "# + named
            + #""remove": \#(list(removed)), "# + conversations + edited
            + #""diagnostics": [\#(problems.joined(separator: ", "))]}"#
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
