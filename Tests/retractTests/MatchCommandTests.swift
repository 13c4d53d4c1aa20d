import Foundation
import PayloadVectors
import Testing

@Suite("retract match")
struct MatchCommandTests {
    @Test func readmeExampleRemovesTheRetractedNotifications() throws {
        // The command README.md gives, on the files it names.
        let result = try RetractCLI.run(["match", "--push", "docs/examples/push.json", "--delivered", "docs/examples/delivered.json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout
                == #"{"retraction": true, "references": ["233", "msg-8812"], "threads": [], "remove": ["6F1C1E0A-2B8D-4F57-9E0D-0D5B7C1A9F10", "A77B0E4C-0F0B-4C39-8D7B-2E3F0C6B5D21"], "diagnostics": []}"#
                + "\n"
        )
        #expect(result.stderr.isEmpty)
    }

    @Test func articlePushMatchesByCustomDataAndIdentifier() throws {
        let scratch = try ScratchFolder()
        let push = try scratch.file(
            "push.json",
            #"{"aps": {"content-available": 1}, "notifcationCustomData": {"pushNotificationReferanceId": 233, "isReferedNotificationMustRemoved": true}}"#
        )
        let delivered = try scratch.file(
            "delivered.json",
            """
            [{"identifier": "z-by-data", "userInfo": {"notifcationCustomData": "{\\"pushNotificationReferanceId\\": \\"233\\"}"}},
             {"identifier": "233"},
             {"identifier": "a-other", "userInfo": {"notificationCustomData": {"pushNotificationReferenceId": 234}}}]
            """
        )
        let result = try RetractCLI.run(["match", "--push", push, "--delivered", delivered])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout
                == #"{"retraction": true, "references": ["233"], "threads": [], "remove": ["233", "z-by-data"], "diagnostics": []}"# + "\n")
    }

    @Test func pushThatIsNotARetractionRemovesNothing() throws {
        let scratch = try ScratchFolder()
        let push = try scratch.file(
            "push.json", #"{"aps": {"alert": "hi"}, "notificationCustomData": {"pushNotificationReferenceId": "msg-8812"}}"#)
        let result = try RetractCLI.run(["match", "--push", push, "--delivered", "docs/examples/delivered.json"])
        #expect(result.status == 0)
        #expect(result.stdout == #"{"retraction": false, "references": [], "threads": [], "remove": [], "diagnostics": []}"# + "\n")
    }

    @Test func aFlagThatIsNotAnAcceptedFormIsReportedAndRemovesNothing() throws {
        let scratch = try ScratchFolder()
        let push = try scratch.file(
            "push.json", #"{"notificationCustomData": {"pushNotificationReferenceId": "a", "isReferredNotificationMustRemoved": "yes"}}"#)
        let result = try RetractCLI.run(["match", "--push", push, "--delivered", "docs/examples/delivered.json"])
        #expect(result.status == 0)
        let problem = #"notificationCustomData.isReferredNotificationMustRemoved: \"yes\" is not a removal flag (true, 1 or \"true\")"#
        #expect(
            result.stdout
                == #"{"retraction": false, "references": [], "threads": [], "remove": [], "diagnostics": [{"key": "notificationCustomData.isReferredNotificationMustRemoved", "problem": "\#(problem)"}]}"#
                + "\n"
        )
        #expect(
            result.stderr
                == #"retract match: warning: \#(push): notificationCustomData.isReferredNotificationMustRemoved: "yes" is not a removal flag (true, 1 or "true")"#
                + "\n"
        )
    }

    /// Every case of Tests/Vectors/payloads.json, through the command as a
    /// payload author runs it.
    @Test(arguments: try PayloadVectors.load().cases)
    func payloadVector(_ vector: PayloadVectors.Case) throws {
        let scratch = try ScratchFolder()
        let push = try scratch.file("push.json", vector.pushJSON)
        let delivered = try scratch.file("delivered.json", vector.deliveredJSON)
        let result = try RetractCLI.run(["match", "--push", push, "--delivered", delivered])
        #expect(result.status == 0, "\(result.stderr)")
        let printed = try #require(
            JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(printed["retraction"] as? Bool == vector.retraction)
        #expect(printed["references"] as? [String] == vector.references.sorted())
        #expect(printed["threads"] as? [String] == vector.threads.sorted())
        #expect(printed["remove"] as? [String] == vector.remove.sorted())
        #expect(printed["account"] as? String == vector.account)
        let rebuilt = (printed["rebuilt"] as? [[String: Any]] ?? []).map { entry in
            PayloadVectors.Rebuilt(
                name: entry["name"] as? String ?? "",
                messages: (entry["messages"] as? [[String: String]] ?? []).map {
                    .init(reference: $0["reference"] ?? "", text: $0["text"] ?? "")
                })
        }
        #expect(rebuilt == vector.rebuilt.sorted { $0.name < $1.name })
        if let edit = vector.edit {
            let printedEdit = printed["edit"] as? [String: Any]
            #expect(printedEdit?["body"] as? String == edit.body)
            #expect(printedEdit?["title"] as? String == edit.title)
            #expect(edit.title != nil || printedEdit?["title"] is NSNull)
            #expect(printed["edited"] as? [String] == vector.edited.sorted())
        } else {
            #expect(printed["edit"] == nil && printed["edited"] == nil)
        }
        let diagnostics = printed["diagnostics"] as? [[String: String]] ?? []
        #expect(diagnostics.compactMap { $0["key"] }.sorted() == vector.diagnostics.sorted())
        #expect(result.stderr.split(separator: "\n").count == vector.diagnostics.count, "\(result.stderr)")

        // RetractKit for Android reads the same files and prints the same line.
        let android = try AndroidMatch.run(["--push", push, "--delivered", delivered])
        #expect(android.status == 0, "\(android.stderr)")
        #expect(AndroidMatch.comparable(android.stdout) == AndroidMatch.comparable(result.stdout))
        #expect(android.stderr.split(separator: "\n").count == vector.diagnostics.count, "\(android.stderr)")
    }

    /// Broken inputs: each exits 2 with one line naming the file and the problem.
    static let brokenInputs: [(push: String?, delivered: String?, message: String)] = [
        (nil, "[]", "PUSH: no such file"),
        ("{}", nil, "DELIVERED: no such file"),
        ("{\"aps\": ", "[]", "PUSH: not valid JSON"),
        ("", "[]", "PUSH: not valid JSON"),
        ("{}", "[{]", "DELIVERED: not valid JSON"),
        ("[1]", "[]", "PUSH: expected a JSON object (the push's userInfo), found an array"),
        ("{}", "{}", #"DELIVERED: expected a JSON array of {"identifier", "userInfo"}, found an object"#),
        ("{}", "[7]", "DELIVERED: element 0: expected an object, found a number"),
        (
            "{}", #"[{"identifier": "a"}, {"userInfo": {}}]"#,
            #"DELIVERED: element 1: "identifier" must be a string (an iPhone's notification), or give "tag" and "id" (an Android one)"#
        ),
        ("{}", #"[{"identifier": "a", "userInfo": "x"}]"#, #"DELIVERED: element 0: "userInfo" must be an object, found a string"#),
        (
            "{}", #"[{"identifier": "a", "threadIdentifier": 7}]"#,
            #"DELIVERED: element 0: "threadIdentifier" must be a string, found a number"#
        ),
        ("{}", #"[{"tag": 7}]"#, #"DELIVERED: element 0: "tag" must be a string or null, found a number"#),
        (
            "{}", #"[{"tag": "a", "id": true}]"#,
            #"DELIVERED: element 0: "id" must be an integer (a 32-bit notification id), found a boolean"#
        ),
        ("{}", #"[{"tag": "a", "id": 1.5}]"#, #"DELIVERED: element 0: "id" must be an integer (a 32-bit notification id), found a number"#),
        ("{}", #"[{"id": 3000000000}]"#, #"DELIVERED: element 0: "id" must be an integer (a 32-bit notification id), found a number"#),
        ("{}", #"[{"id": 1, "extras": []}]"#, #"DELIVERED: element 0: "extras" must be an object, found an array"#),
        ("{}", #"[{"tag": "a", "group": 3}]"#, #"DELIVERED: element 0: "group" must be a string, found a number"#),
    ]

    @Test(arguments: brokenInputs.indices)
    func brokenFileExitsTwoNamingTheFile(index: Int) throws {
        let input = Self.brokenInputs[index]
        let scratch = try ScratchFolder()
        let push = try input.push.map { try scratch.file("push.json", $0) } ?? scratch.url.appendingPathComponent("missing-push.json").path
        let delivered =
            try input.delivered.map { try scratch.file("delivered.json", $0) } ?? scratch.url.appendingPathComponent("missing.json").path
        let result = try RetractCLI.run(["match", "--push", push, "--delivered", delivered])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        let expected = input.message.replacingOccurrences(of: "PUSH", with: push).replacingOccurrences(of: "DELIVERED", with: delivered)
        #expect(result.stderr.hasPrefix("retract match: " + expected), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")

        // The Android library's entry refuses the same files with the same exit code.
        let android = try AndroidMatch.run(["--push", push, "--delivered", delivered])
        #expect(android.status == 2)
        #expect(android.stdout.isEmpty)
        #expect(android.stderr.hasPrefix("android-match: " + expected), "\(android.stderr)")
    }

    @Test func folderInsteadOfFileExitsTwo() throws {
        let result = try RetractCLI.run(["match", "--push", "docs", "--delivered", "docs/examples/delivered.json"])
        #expect(result.status == 2)
        #expect(result.stderr == "retract match: docs: is a directory, not a file\n")
    }

    @Test func missingOptionIsAUsageError() throws {
        let result = try RetractCLI.run(["match", "--push", "docs/examples/push.json"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--delivered"))
    }
}

extension PayloadVectors.Case: CustomTestStringConvertible {
    public var testDescription: String { name }
}
