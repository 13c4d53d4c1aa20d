import APNsSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractTestSupport
import Testing

/// Edits through `retract serve` (`POST /v1/edits`) and `retract edit`, and
/// what the simulator's phones show after them, in every state a phone is in.
@Suite("Edits through retract serve")
struct EditCommandTests {
    /// The states a phone is in, each once with the original still showing and once dismissed.
    static let kinds: [(name: String, phone: APNsSimulatedDevice.Phone)] = [
        ("awake", .init()),
        ("low power", .init(appState: .lowPower)),
        ("force-quit", .init(appState: .forceQuit)),
        ("force-quit with an extension", .init(appState: .forceQuit, serviceExtension: .unfiltered)),
        ("force-quit with a filtering extension", .init(appState: .forceQuit, serviceExtension: .filtering)),
    ]

    static let before = "See you at 8?"
    static let after = "See you at 9?"

    /// What a phone shows once the edit is sent: the new text, the old, or nothing.
    enum Shows: Equatable {
        case newText, oldText, nothing
    }

    /// What each mode can do, by phone: the table docs/payload.md ("Edits") gives.
    static func expected(_ mode: RetractionMode, _ phone: APNsSimulatedDevice.Phone, dismissed: Bool) -> Shows {
        switch (mode, dismissed) {
        // RetractKit edits what shows, where iOS hands the app the push; it never posts a notification.
        case (.background, true): .nothing
        case (.background, false): phone.appState == .background ? .newText : .oldText
        // The carrier takes the original's place; where there is none, only a filtering extension hides it.
        case (.serviceExtension, false): .newText
        case (.serviceExtension, true): phone.serviceExtension == .filtering ? .nothing : .newText
        // An alert in the original's place: it shows whether the original was dismissed or not.
        case (.replace, _): .newText
        }
    }

    @Test(arguments: RetractionMode.allCases)
    func anEditShowsTheNewTextWhereTheOriginalStillShowsAndWhatEachModeCanDoElsewhere(mode: RetractionMode) async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let key = try ServeCommandTests.createKey(stage, app: "chat", scopes: "send,retract,read")
            let serve = try await ServeProcess.start(
                [], environment: ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath])
            do {
                let tokens = TestTokens.tokens(0..<(2 * Self.kinds.count))
                let phones = tokens.enumerated().map { index, token in
                    SimulatedPhone(deviceToken: token.hex, on: stage.apns.simulator, kind: Self.kinds[index % Self.kinds.count].phone)
                }
                let sent = try await serve.http.call(
                    "POST", "/v1/notifications", key: key,
                    body: #"""
                        {"app":"chat","reference":"m1","tokens":\#(Self.hex(tokens)),
                         "payload":{"aps":{"alert":{"title":"Ada","body":"\#(Self.before)"}}}}
                        """#)
                try #require(sent.status == 200, "\(sent)")
                for phone in phones {
                    let screen = await phone.settle()
                    try #require(screen.texts == ["m1": Self.before])
                }
                // The user of every other phone swiped the message away.
                for phone in phones[Self.kinds.count...] { await phone.dismiss("m1") }

                let made = try await serve.http.call(
                    "POST", "/v1/edits", key: key,
                    body:
                        #"{"app":"chat","reference":"m1","title":"Ada","body":"\#(Self.after)","mode":"\#(mode.rawValue)","reason":"typo"}"#
                )
                try #require(made.status == 202, "\(made)")
                #expect(made.json?["devices"] as? Int == tokens.count)
                // The answer says what this mode cannot do.
                #expect((made.json?["warnings"] as? [String])?.first == RetractionWarnings.editReach(mode))
                let id = try #require(made.json?["id"] as? String)
                let account = try await Self.waitUntilDone(id, key: key, serve: serve)
                #expect(account["state"] as? String == "done")
                #expect(account["sent"] as? Int == tokens.count, "\(account)")
                #expect((account["edit"] as? [String: String]) == ["title": "Ada", "body": Self.after])
                #expect((account["warnings"] as? [String])?.first == RetractionWarnings.editReach(mode))

                for (index, phone) in phones.enumerated() {
                    let kind = Self.kinds[index % Self.kinds.count]
                    let dismissed = index >= Self.kinds.count
                    let screen = await phone.settle()
                    let shows: Shows =
                        switch screen.texts["m1"] {
                        case Self.after?: .newText
                        case Self.before?: .oldText
                        default: .nothing
                        }
                    let expected = Self.expected(mode, kind.phone, dismissed: dismissed)
                    #expect(shows == expected, "\(mode) on a phone \(kind.name)\(dismissed ? ", dismissed" : ""): \(screen.texts)")
                    // Only ever the one notification, under its own identifier, with its title.
                    #expect(screen.showing.map(\.identifier) == (expected == .nothing ? [] : ["m1"]))
                    if expected != .nothing { #expect(screen.titles["m1"] == "Ada") }
                }
                // The audit log has the edit, who asked and why.
                let audit = try stage.retract(["audit", "--json"])
                let entries = try #require(try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [[String: Any]])
                let created = try #require(entries.first { $0["action"] as? String == "edit.created" }, "\(audit.stdout.suffix(800))")
                #expect((created["details"] as? [String: String])?["reason"] == "typo", "\(created)")
                #expect((created["details"] as? [String: String])?["body"] == Self.after, "\(created)")
            } catch {
                _ = try? await serve.stop()
                throw error
            }
            #expect(try await serve.stop() == 0, "\(serve.log.suffix(2000))")
        }
    }

    /// `retract edit` twice, then a device that gets the original late, then
    /// a retraction: every phone shows the newest text, then nothing; a
    /// retracted message cannot be edited, and bad input names its flag.
    @Test func aLateDeliveryGetsTheNewestTextAndARetractionStillRemovesTheEditedMessage() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let serve = try await ServeProcess.start(
                [], environment: ["DATABASE_URL": stage.url.withPassword, "APNS_CA_FILE": stage.apns.caPath])
            do {
                let tokens = TestTokens.tokens(0..<3)
                let phones = tokens.map { SimulatedPhone(deviceToken: $0.hex, on: stage.apns.simulator) }
                let payload = try stage.apns.file("payload.json", #"{"aps":{"alert":{"title":"Ada","body":"v1"}}}"#)
                let early = try stage.apns.file("early.txt", tokens.prefix(2).map(\.hex).joined(separator: "\n"))
                let sent = try stage.retract(["send", "--app", "chat", "--reference", "m1", "--payload", payload, "--tokens-file", early])
                try #require(sent.status == 0, "\(sent.stderr)")

                let second = try stage.retract(["edit", "m1", "--app", "chat", "--body", "v2", "--json"])
                #expect(second.status == 0, "\(second.stderr)")
                let account = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
                #expect(account["sent"] as? Int == 2)
                #expect((account["edit"] as? [String: String]) == ["body": "v2"])
                let third = try stage.retract(["edit", "m1", "--app", "chat", "--title", "Ada", "--body", "v3"])
                #expect(third.status == 0, "\(third.stderr)")
                #expect(third.stdout.contains("edit"), "\(third.stdout)")

                // The third phone gets the original (with its old text) only now: the edit follows it.
                let late = try stage.apns.file("late.txt", tokens[2].hex)
                let lateSend = try stage.retract([
                    "send", "--app", "chat", "--reference", "m1", "--payload", payload, "--tokens-file", late,
                ])
                try #require(lateSend.status == 0, "\(lateSend.stderr)")
                try await Self.waitUntilNothingQueued(stage)
                for phone in phones {
                    let screen = await phone.settle()
                    #expect(screen.texts == ["m1": "v3"], "\(screen.texts)")
                    #expect(screen.titles == ["m1": "Ada"])
                }
                #expect(stage.apns.inbox(tokens[2]).count == 2)

                // A retraction still finds the edited notification, by the reference it keeps.
                let retracted = try stage.retract(["notification", "m1", "--app", "chat"])
                #expect(retracted.status == 0, "\(retracted.stderr)")
                for phone in phones { #expect(await phone.settle().showing.isEmpty) }

                let refused = try stage.retract(["edit", "m1", "--app", "chat", "--body", "v4"])
                #expect(refused.status == 10, "\(refused.stderr)")
                #expect(refused.stderr.contains("was retracted"), "\(refused.stderr)")
                let empty = try stage.retract(["edit", "m2", "--app", "chat", "--body", " "])
                #expect(empty.status == 2, "\(empty.stderr)")
                #expect(empty.stderr.contains("--body: the body must not be empty"), "\(empty.stderr)")
                let unknown = try stage.retract(["edit", "m9", "--app", "chat", "--body", "v1"])
                #expect(unknown.status == 7, "\(unknown.stderr)")
                for phone in phones { #expect(await phone.settle().showing.isEmpty) }
            } catch {
                _ = try? await serve.stop()
                throw error
            }
            #expect(try await serve.stop() == 0, "\(serve.log.suffix(2000))")
        }
    }

    static func hex(_ tokens: [DeviceToken]) -> String {
        "[" + tokens.map { "\"\($0.hex)\"" }.joined(separator: ",") + "]"
    }

    static func waitUntilDone(_ id: String, key: String, serve: ServeProcess) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let answer = try await serve.http.call("GET", "/v1/retractions/\(id)", key: key)
            if let json = answer.json, json["state"] as? String == "done" { return json }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CLIError("edit \(id) not done within 60 s")
    }

    /// Until the workers of `retract serve` have sent every queued edit and retraction.
    static func waitUntilNothingQueued(_ stage: EndToEndTests.Stage) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await ServeCommandTests.count("SELECT count(*) FROM retractions WHERE state IN ('queued', 'sending')", url: stage.url)
                == 0
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CLIError("edits still queued after 60 s")
    }
}
