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
            notification is listed by its tag, tag#id when its id is not 0, #id without a tag. \
            scripts/android-match takes the same files and prints the same.

            Prints one JSON object: {"retraction": true|false, "references": [...], "threads": [...], "remove": [...], \
            "diagnostics": [{"key": "...", "problem": "..."}]}. For an edit (pushNotificationEdit), "references" are \
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
        let delivered: [DeliveredNotification]
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
        let center = InMemoryNotificationCenter(delivered: delivered)
        let report = await RetractionHandler(center: center).handle(reading)
        let removed = report.outcome.identifiers
        print(
            MatchReport(
                isRetraction: report.outcome != .notARetraction,
                references: (report.edit?.edit.references ?? report.references).map(\.rawValue),
                threads: Array(report.threads),
                removed: removed,
                edit: report.edit,
                diagnostics: report.diagnostics
            ).json
        )
    }

    private func readPush() throws(InputFile.Problem) -> [String: Any] {
        let file = InputFile(path: pushPath)
        let json = try file.json()
        guard let object = json as? [String: Any] else {
            throw file.problem("expected a JSON object (the push's userInfo), found \(jsonKind(json))")
        }
        return object
    }

    private func readDelivered() throws(InputFile.Problem) -> [DeliveredNotification] {
        let file = InputFile(path: deliveredPath)
        let json = try file.json()
        guard let elements = json as? [Any] else {
            throw file.problem("expected a JSON array of {\"identifier\", \"userInfo\"}, found \(jsonKind(json))")
        }
        var delivered: [DeliveredNotification] = []
        for (index, element) in elements.enumerated() {
            guard let object = element as? [String: Any] else {
                throw file.problem("element \(index): expected an object, found \(jsonKind(element))")
            }
            if object["identifier"] == nil, object["tag"] != nil || object["id"] != nil {
                delivered.append(try androidNotification(object, file: file, at: "element \(index): "))
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
            delivered.append(DeliveredNotification(identifier: identifier, userInfo: userInfo, threadIdentifier: thread as? String))
        }
        return delivered
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
    var removed: [String]
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
        return #"{"retraction": \#(isRetraction), "references": \#(list(references)), "threads": \#(list(threads)), "#
            + #""remove": \#(list(removed)), "# + edited
            + #""diagnostics": [\#(problems.joined(separator: ", "))]}"#
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
