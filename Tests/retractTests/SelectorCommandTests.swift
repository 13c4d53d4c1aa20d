import APNsSimulator
import Foundation
import PostgresNIO
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Conversations, senders, recipients and campaigns from the command line:
/// what `record` and `send` keep of them, and what `send` writes.
@Suite("retract selectors")
struct SelectorCommandTests {
    /// The labels of every delivery of `reference`, as "thread,sender,recipient,campaign" ("-" for none).
    static func labels(_ stage: EndToEndTests.Stage, of reference: String) async throws -> [String] {
        try await stage.store { store in
            try await store.client.query(
                """
                SELECT coalesce(thread, '-') || ',' || coalesce(sender, '-') || ',' || coalesce(recipient, '-') || ','
                       || coalesce(campaign, '-')
                FROM deliveries WHERE reference = \(reference) ORDER BY token
                """, logger: TestDatabase.logger
            ).collect().map { try $0.decode(String.self) }
        }
    }

    @Test func recordAndSendKeepTheLabelsAndSendWritesTheThread() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<2)
            let recorded = try stage.retract(
                ["record", "--app", "chat", "--reference", "m1", "--thread", "c-1", "--sender", "ann", "--recipient", "bob"]
                    + devices.flatMap { ["--token", $0.hex] })
            #expect(recorded.status == 0, "\(recorded.stderr)")
            #expect(try await Self.labels(stage, of: "m1") == ["c-1,ann,bob,-", "c-1,ann,bob,-"])

            let payload = try stage.apns.file("hello.json", #"{"aps":{"alert":{"body":"Hello"}}}"#)
            let sent = try stage.retract(
                ["send", "--app", "chat", "--reference", "m2", "--payload", payload, "--thread", "c-1", "--campaign", "launch"]
                    + devices.flatMap { ["--token", $0.hex] })
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(try await Self.labels(stage, of: "m2") == ["c-1,-,-,launch", "c-1,-,-,launch"])
            for device in devices {
                let original = try #require(stage.apns.inbox(device).first)
                #expect((original.userInfo["aps"] as? [String: Any])?["thread-id"] as? String == "c-1")
                #expect(RetractPayload.read(original.userInfo).customData?.threadID == "c-1")
                // On the phone it belongs to the conversation.
                #expect(DeliveredNotification(identifier: "m2", userInfo: original.userInfo).threadIDs == ["c-1"])
            }

            // A label unfit to keep is named by its flag; a payload with another thread-id is refused; nothing is written.
            let empty = try stage.retract(["record", "--app", "chat", "--reference", "m3", "--sender", "", "--token", devices[0].hex])
            #expect(empty.status == 2)
            #expect(empty.stderr.contains("--sender: must not be empty"), "\(empty.stderr)")
            let otherThread = try stage.apns.file("other.json", #"{"aps":{"alert":"x","thread-id":"c-2"}}"#)
            let conflicting = try stage.retract(
                ["send", "--app", "chat", "--reference", "m3", "--payload", otherThread, "--thread", "c-1", "--token", devices[0].hex])
            #expect(conflicting.status == 2)
            #expect(conflicting.stderr.contains("aps.thread-id"), "\(conflicting.stderr)")
            #expect(try await Self.labels(stage, of: "m3").isEmpty)
        }
    }

    /// Two accounts' message 233 from the command line: `send --account` writes
    /// each one's custom data and collapse id, `notification --account`
    /// retracts one of them, prints its account, and the phone keeps the other.
    @Test func anAccountsMessageIsSentAndRetractedApartFromAnotherAccountsOfTheSameNumber() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let device = TestTokens.token(0)
            let payload = try stage.apns.file("hello.json", #"{"aps":{"alert":{"body":"Hello"},"mutable-content":1}}"#)
            for account in ["acme", "globex"] {
                let sent = try stage.retract(
                    ["send", "--app", "chat", "--reference", "233", "--payload", payload, "--account", account, "--token", device.hex])
                #expect(sent.status == 0, "\(sent.stderr)")
            }
            #expect(stage.apns.inbox(device).map(\.collapseID) == ["acme/233", "globex/233"])
            let retracted = try stage.retract(["notification", "233", "--app", "chat", "--account", "acme"])
            #expect(retracted.status == 0, "\(retracted.stderr)")
            #expect(retracted.stdout.contains("(app chat, account acme)"), "\(retracted.stdout)")
            let screen = await APNsSimulatedDevice.replay(stage.apns.inbox(device), on: .init(serviceExtension: .unfiltered))
            #expect(screen.showing.map(\.identifier) == ["globex/233"])
            // The only account has no 233: nothing recorded of it.
            let none = try stage.retract(["notification", "233", "--app", "chat"])
            #expect(none.status == 7, "\(none.stderr)")
            let bad = try stage.retract(["record", "--app", "chat", "--reference", "1", "--account", "", "--token", device.hex])
            #expect(bad.status == 2)
            #expect(bad.stderr.contains("--account: an account must not be empty"), "\(bad.stderr)")
        }
    }

    /// The original of `reference` as a phone received it, in `thread`.
    static func original(_ reference: String, thread: String) -> APNsReceivedPush {
        APNsReceivedPush(
            apnsID: UUID(), headers: ["apns-push-type": "alert", "apns-collapse-id": reference],
            body: Data(
                #"{"aps":{"alert":"\#(reference)","thread-id":"\#(thread)"},"notificationCustomData":{"pushNotificationReferenceId":"\#(reference)"}}"#
                    .utf8),
            receivedAt: Date())
    }

    /// A banned sender wrote in 20 conversations; the moderator takes back
    /// everything they wrote, and what others wrote in those conversations stays.
    @Test func aBannedSendersMessagesAcrossTwentyConversationsAreRetractedBySender() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let devices = TestTokens.tokens(0..<6)
            // Conversation i is between devices i % 6 and (i + 1) % 6.
            func members(_ conversation: Int) -> [DeviceToken] { [devices[conversation % 6], devices[(conversation + 1) % 6]] }
            var received: [DeviceToken: [APNsReceivedPush]] = [:]
            for conversation in 0..<20 {
                var messages = [("spam-\(conversation)", "spammer")]
                if conversation < 4 { messages.append(("hello-\(conversation)", "ann")) }
                for (reference, sender) in messages {
                    let recorded = try stage.retract(
                        ["record", "--app", "chat", "--reference", reference, "--thread", "c-\(conversation)", "--sender", sender]
                            + members(conversation).flatMap { ["--token", $0.hex] })
                    try #require(recorded.status == 0, "\(recorded.stderr)")
                    for device in members(conversation) {
                        received[device, default: []].append(Self.original(reference, thread: "c-\(conversation)"))
                    }
                }
            }

            let dryRun = try stage.retract(["notification", "--app", "chat", "--sender", "spammer", "--dry-run"])
            #expect(dryRun.status == 0, "\(dryRun.stderr)")
            #expect(dryRun.stdout.contains(#"of sender "spammer" sent before"#), "\(dryRun.stdout)")
            #expect(dryRun.stdout.contains("matched: 20 references on 6 devices"), "\(dryRun.stdout)")
            #expect(dryRun.stdout.contains("dry run: 6 devices would get a removal push"), "\(dryRun.stdout)")

            let result = try stage.retract(
                ["notification", "--app", "chat", "--sender", "spammer", "--reason", "banned", "--mode", "service-extension", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let account = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect(account["sender"] as? String == "spammer")
            #expect(account["total"] as? Int == 6)
            #expect(account["sent"] as? Int == 6)
            #expect(account["referencesMatched"] as? Int == 20)
            #expect(account["mostPushesToOneDevice"] as? Int == 1)

            for device in devices {
                let pushes = stage.apns.inbox(device)
                #expect(pushes.count == 1)
                let phone = APNsSimulatedDevice.Phone(appState: .forceQuit, serviceExtension: .filtering)
                let screen = await APNsSimulatedDevice.replay((received[device] ?? []) + pushes, on: phone)
                #expect(screen.showing.allSatisfy { $0.identifier.hasPrefix("hello-") }, "\(screen.texts)")
                let hellos = (0..<4).filter { members($0).contains(device) }.map { "hello-\($0)" }
                #expect(screen.showing.map(\.identifier).sorted() == hellos.sorted())
            }
        }
    }

    /// A campaign of 200,000 deliveries (10 sends to 20,000 devices) taken
    /// back by its label: one push a device with its 10 references, and
    /// another campaign to the same devices left alone.
    @Test func aCampaignOf200000DeliveriesIsRetractedByCampaign() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("shop")
            let devices = TestTokens.tokens(0..<20_000)
            let file = try stage.apns.file("devices.txt", devices.map(\.hex).joined(separator: "\n"))
            let sends = (1...10).map { "spring-\($0)" }
            for reference in sends + ["autumn-1"] {
                let campaign = reference.hasPrefix("spring") ? "spring" : "autumn"
                let recorded = try stage.retract(
                    ["record", "--app", "shop", "--reference", reference, "--campaign", campaign, "--tokens-file", file])
                try #require(recorded.status == 0, "\(recorded.stderr)")
            }
            let result = try stage.retract(["notification", "--app", "shop", "--campaign", "spring", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let account = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect(account["total"] as? Int == 20_000)
            #expect(account["sent"] as? Int == 20_000)
            #expect(account["referencesMatched"] as? Int == 10)
            #expect(account["pushes"] as? Int == 20_000)

            let inboxes = stage.apns.simulator.inboxes
            #expect(inboxes.count == 20_000)
            let expected = Set(sends.map { ReferenceID($0) })
            for (index, device) in devices.enumerated() {
                let inbox = inboxes[device.hex] ?? []
                try #require(inbox.count == 1, "device \(index) got \(inbox.count) pushes")
                #expect(RetractPayload.retraction(in: inbox[0].userInfo) == expected)
            }
        }
    }

    /// Each refused with exit 2 and a line naming its flag, or 6 for an unknown app; nothing written.
    @Test func badSelectorsFromTheCommandLineAreRefusedAndNothingIsWritten() async throws {
        try await EndToEndTests.withStage { stage in
            try stage.addApp("chat")
            let device = TestTokens.token(0)
            let recorded = try stage.retract(["record", "--app", "chat", "--reference", "m1", "--thread", "c-1", "--token", device.hex])
            #expect(recorded.status == 0, "\(recorded.stderr)")
            let future = Date().addingTimeInterval(3600).formatted(.iso8601)
            let cases: [(arguments: [String], status: Int32, message: String)] = [
                (["--thread", "c-1", "--sender", "ann"], 2, "give one selector, not --thread and --sender"),
                (["--thread", ""], 2, "--thread: must not be empty"),
                (["m1", "--campaign", "spring"], 2, "references: name references or a selector (here campaign), not both"),
                (["m1", "--since", "2026-11-01T00:00:00Z"], 2, "--since and --until go with a selector"),
                (["--sender", "ann", "--until", future], 2, "--until: "),
                (["--sender", "ann", "--since", "last week"], 2, #"--since "last week" is not an ISO 8601 time"#),
                ([], 2, "references: at least one reference, or one selector: thread, sender, recipient or campaign"),
            ]
            for (arguments, status, message) in cases {
                let result = try stage.retract(["notification", "--app", "chat"] + arguments)
                #expect(result.status == status, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            }
            let unknown = try stage.retract(["notification", "--app", "nope", "--thread", "c-1"])
            #expect(unknown.status == 6, "\(unknown.stderr)")
            #expect(unknown.stderr.contains("nope"), "\(unknown.stderr)")
            #expect(try await stage.store { try await Self.count($0, "SELECT count(*) FROM retractions") } == 0)
        }
    }

    /// The legacy dialect has no threads: a conversation goes one push per
    /// message, and the dry run and the account say what that costs.
    @Test func aLegacyAppsConversationIsExpandedIntoOnePushPerMessageWithAWarning() async throws {
        try await EndToEndTests.withStage { stage in
            let added = try stage.retract(stage.apps.appsAddArguments(name: "old") + ["--dialect", "legacy"])
            try #require(added.status == 0, "\(added.stderr)")
            let device = TestTokens.token(0)
            for message in 1...5 {
                let recorded = try stage.retract(
                    ["record", "--app", "old", "--reference", "\(message)", "--thread", "c-1", "--token", device.hex])
                try #require(recorded.status == 0, "\(recorded.stderr)")
            }
            let dryRun = try stage.retract(["notification", "--app", "old", "--thread", "c-1", "--dry-run"])
            #expect(dryRun.status == 0, "\(dryRun.stderr)")
            #expect(
                dryRun.stdout.contains(
                    "warning: the app's legacy dialect carries one reference per push, so some devices get up to 5 pushes"))
            let result = try stage.retract(["notification", "--app", "old", "--thread", "c-1"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("pushes: 5, up to 5 to one device"), "\(result.stdout)")
            #expect(result.stdout.contains("warning: the app's legacy dialect"), "\(result.stdout)")
            let inbox = stage.apns.inbox(device)
            #expect(inbox.count == 5)
            #expect(Set(inbox.compactMap { RetractPayload.retraction(in: $0.userInfo) }.flatMap { $0 }) == ["1", "2", "3", "4", "5"])
        }
    }

    static func count(_ store: RetractStore, _ sql: PostgresQuery) async throws -> Int {
        for try await value in try await store.client.query(sql, logger: TestDatabase.logger).decode(Int.self) { return value }
        return 0
    }
}
