import Foundation
import RetractKit
import Testing

/// Several accounts of one app on one phone: each account's message 233 is
/// its own, for the handler, the tombstones, the extension's late-original
/// check and the device feed. (The matching rules themselves are in the
/// vectors, Tests/Vectors/payloads.json.)
@Suite("Accounts")
struct AccountTests {
    static func original(_ reference: String, account: String?) -> [AnyHashable: Any] {
        var customData: [String: Any] = ["pushNotificationReferenceId": reference]
        customData["pushNotificationAccount"] = account
        return [
            "aps": ["alert": ["body": "\(account ?? "only") \(reference)"], "mutable-content": 1], "notificationCustomData": customData,
        ]
    }

    static func retraction(_ reference: String, account: String?) throws -> [AnyHashable: Any] {
        let body = try PayloadBuilder(account: account).retractionBodies(for: [ReferenceID(reference)])[0]
        return try #require(try JSONSerialization.jsonObject(with: body) as? [AnyHashable: Any])
    }

    @Test func theBuilderWritesTheAccountFirstInEveryBody() throws {
        let builder = PayloadBuilder(account: "acme")
        #expect(
            try builder.retractionBodies(for: ["233"])[0].utf8String
                == #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationAccount":"acme","pushNotificationReferenceId":"233","isReferredNotificationMustRemoved":true}}"#
        )
        #expect(
            try builder.threadRetractionBody(for: ["general"]).utf8String
                == #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationAccount":"acme","pushNotificationThreadIds":["general"],"isReferredNotificationMustRemoved":true}}"#
        )
        #expect(
            try builder.originalCustomData(for: "233").utf8String
                == #"{"pushNotificationAccount":"acme","pushNotificationReferenceId":"233"}"#)
        // An original's thread-id is the account's, so iOS groups two accounts' "general" apart.
        let original = try builder.originalPayload(Data(#"{"aps":{"alert":"hi"}}"#.utf8), reference: "233", thread: "general")
        let object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        #expect((object["aps"] as? [String: Any])?["thread-id"] as? String == "acme/general")
        let read = RetractPayload.read(object)
        #expect(read.account == "acme")
        #expect(read.customData?.threadID == "general")
        // A payload's own account is replaced by the builder's.
        let replaced = try builder.originalPayload(
            Data(#"{"aps":{"alert":"hi"},"notificationCustomData":{"pushNotificationAccount":"globex"}}"#.utf8), reference: "233")
        #expect(RetractPayload.read(try #require(try JSONSerialization.jsonObject(with: replaced) as? [String: Any])).account == "acme")
        // In the legacy dialect too, with integer ids.
        #expect(
            try PayloadBuilder(dialect: .legacy, account: "acme").retractionBodies(for: [233])[0].utf8String
                == #"{"aps":{"content-available":1},"notifcationCustomData":{"pushNotificationAccount":"acme","pushNotificationReferanceId":233,"isReferedNotificationMustRemoved":true}}"#
        )
    }

    @Test func aRetractionRemovesAndRemembersWithinItsAccount() async throws {
        let center = InMemoryNotificationCenter(delivered: [
            DeliveredNotification(identifier: "a", userInfo: Self.original("233", account: "acme")),
            DeliveredNotification(identifier: "b", userInfo: Self.original("233", account: "globex")),
        ])
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let outcome = await RetractionHandler(center: center, tombstones: tombstones).handle(
            userInfo: try Self.retraction("233", account: "acme"))
        #expect(outcome == .removed(["a"]))
        #expect(center.delivered.map(\.identifier) == ["b"])
        #expect(tombstones.contains("233", account: "acme"))
        #expect(!tombstones.contains("233", account: "globex"))
        #expect(!tombstones.contains("233"))
        #expect(tombstones.retracted == RetractedReferences(["233"], account: "acme"))
    }

    @Test func theExtensionDropsOnlyTheRetractedAccountsLateOriginal() async throws {
        let center = InMemoryNotificationCenter()
        let tombstones = Tombstones(storage: InMemoryTombstoneStorage())
        let service = RetractionServiceExtension(center: center, tombstones: tombstones, hasFilteringEntitlement: true)
        _ = await RetractionHandler(center: center, tombstones: tombstones).handle(userInfo: try Self.retraction("233", account: "acme"))
        #expect(await service.decide(identifier: "x", userInfo: Self.original("233", account: "acme")) == .suppress)
        #expect(await service.decide(identifier: "y", userInfo: Self.original("233", account: "globex")) == .passThrough)
        #expect(await service.decide(identifier: "z", userInfo: Self.original("233", account: nil)) == .passThrough)
        // The account's collapse id is enough, without custom data.
        #expect(await service.decide(identifier: "acme/233", userInfo: ["aps": ["alert": "hi"]]) == .suppress)
    }

    @Test func tombstonesWrittenBeforeAccountsReadAsTheOnlyAccounts() {
        let storage = InMemoryTombstoneStorage()
        let now = Date().timeIntervalSince1970
        storage.save(Data(#"{"entries":[{"reference":"233","retractedAt":\#(now)}]}"#.utf8))
        let tombstones = Tombstones(storage: storage)
        #expect(tombstones.contains("233"))
        #expect(!tombstones.contains("233", account: "acme"))
    }

    @Test func theFeedRemovesEachRetractionWithinItsAccount() async throws {
        let stub = FeedStub(always: .page([["233"], ["234"]], cursor: "c1", accounts: ["acme", nil]))
        let center = InMemoryNotificationCenter(delivered: [
            DeliveredNotification(identifier: "a", referenceID: "233", account: "acme"),
            DeliveredNotification(identifier: "b", referenceID: "233", account: "globex"),
            DeliveredNotification(identifier: "c", referenceID: "234"),
            DeliveredNotification(identifier: "d", referenceID: "234", account: "acme"),
        ])
        let page = try await stub.feed.page(for: DeviceToken(bytes: [1, 2]), since: nil)
        #expect(page.references == ["234"])
        #expect(page.retracted.references(of: "acme") == ["233"])
        #expect(page.retracted.accounts == [nil, "acme"])
        let caughtUp = try await stub.feed.catchUp(
            token: DeviceToken(bytes: [1, 2]), since: nil, handler: RetractionHandler(center: center))
        #expect(caughtUp.outcome == .removed(["a", "c"]))
        #expect(center.delivered.map(\.identifier) == ["b", "d"])
    }

    @Test func accountScopedIdentifiersEscapeTheirSeparator() {
        #expect(AccountScope.identifier(of: "233", account: nil) == "233")
        #expect(AccountScope.identifier(of: "233", account: "acme") == "acme/233")
        #expect(AccountScope.identifier(of: "c", account: "a/b%") == "a%2Fb%25/c")
        // Two accounts whose plain joins would meet stay apart.
        #expect(AccountScope.identifier(of: "b/c", account: "a") != AccountScope.identifier(of: "c", account: "a/b"))
    }
}
