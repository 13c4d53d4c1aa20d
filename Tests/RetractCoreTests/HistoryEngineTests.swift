import APNsSimulator
import Foundation
import RetractCore
import RetractKit
import RetractModel
import RetractStore
import RetractTestSupport
import Testing

/// Each retraction push also carries the device's recent earlier
/// retractions, so whichever push reaches the phone last removes them all:
/// iOS hands a suspended app only the latest of a burst of background
/// pushes, and APNs keeps only the latest for an offline phone.
@Suite("Earlier retractions ride along")
struct HistoryEngineTests {
    /// The chat: 300 phones get m1, m2 and m3; m1 is deleted, then m2.
    @Test func twoDeletionsOnPhonesThatKeepOnlyTheLatestPushAreBothGone() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let devices = TestTokens.tokens(0..<300)
                for reference: ReferenceID in ["m1", "m2", "m3"] {
                    _ = try await engine.record(app: app, reference: reference, tokens: devices)
                }
                let first = try await EngineTests.retract(["m1"], app: app, engine: engine)
                #expect(first.retraction.pushes.historyCarried == 0)
                let second = try await EngineTests.retract(["m2"], app: app, engine: engine)
                #expect(second.retraction.counts == RetractionCounts(total: 300, sent: 300))
                #expect(second.retraction.pushes == PushesSent(total: 300, mostToOneDevice: 1, historyCarried: 300, historyLeftOut: 0))

                for device in devices {
                    let inbox = apns.inbox(device)
                    try #require(inbox.count == 2)
                    // Only the latest push reaches the app: it removes both.
                    let latest = try #require(inbox.last)
                    #expect(Self.referenceList(latest) == ["m2", "m1"])
                    let center = InMemoryNotificationCenter(delivered: [
                        DeliveredNotification(identifier: "a", referenceID: "m1"),
                        DeliveredNotification(identifier: "b", referenceID: "m2"),
                        DeliveredNotification(identifier: "c", referenceID: "m3"),
                    ])
                    #expect(await RetractionHandler(center: center).handle(userInfo: latest.userInfo) == .removed(["a", "b"]))
                    #expect(center.delivered.map(\.identifier) == ["c"])
                }
            }
        }
    }

    /// More recent retractions than fit a 4 KB body: the newest that fit ride
    /// along, and the account says how many were left out.
    @Test func theNewestThatFitRideAlongAndTheRestAreCounted() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "chat"), actor: "tests")
                let device = TestTokens.token(7)
                let earlier = (0..<120).map {
                    ReferenceID("conversation-4711/message-" + String(format: "%06d", $0) + "-" + String(repeating: "x", count: 40))
                }
                for reference in earlier + ["now"] {
                    _ = try await engine.record(app: app, reference: reference, tokens: [device])
                }
                // Retracted one by one, oldest first; left queued, as the ledger's history is what counts.
                for reference in earlier {
                    _ = try await engine.store.createRetraction(
                        RetractionRequest(appID: app.id, target: .references([reference]), requestedBy: "tests"))
                }
                let status = try await EngineTests.retract(["now"], app: app, engine: engine)
                let latest = try #require(apns.inbox(device).last)
                #expect(latest.body.count <= 4096)
                let carried = Self.referenceList(latest)
                #expect(carried.first == "now")
                let history = carried.dropFirst().map { ReferenceID($0) }
                #expect(history.count > 10 && history.count < earlier.count)
                // The newest: the last retracted, in order.
                #expect(history == Array(earlier.reversed().prefix(history.count)))
                #expect(RetractPayload.retraction(in: latest.userInfo) == Set(carried.map { ReferenceID($0) }))
                #expect(status.retraction.pushes.historyCarried == history.count)
                #expect(status.retraction.pushes.historyLeftOut == earlier.count - history.count)
                let view = RetractionView(status, app: "chat")
                #expect(view.historyLeftOut == earlier.count - history.count)
            }
        }
    }

    /// The legacy dialect carries one reference per push: nothing rides along, and the dry run says so.
    @Test func aLegacyAppCarriesNoHistoryAndIsToldWhy() async throws {
        try await SimulatedAPNs.with { apns in
            try await EngineTests.withEngine(apns) { engine in
                let app = try await engine.store.registerApp(apns.registration(name: "legacy", dialect: .legacy), actor: "tests")
                let device = TestTokens.token(1)
                for reference: ReferenceID in ["101", "102"] {
                    _ = try await engine.record(app: app, reference: reference, tokens: [device])
                }
                _ = try await EngineTests.retract(["101"], app: app, engine: engine)
                let second = try await EngineTests.retract(["102"], app: app, engine: engine)
                #expect(second.retraction.pushes.historyCarried == 0)
                #expect(RetractPayload.retraction(in: try #require(apns.inbox(device).last).userInfo) == ["102"])
                #expect(second.warnings.contains(RetractionWarnings.noHistory))
            }
        }
    }

    /// The references a canonical body lists, in its order.
    static func referenceList(_ push: APNsReceivedPush) -> [String] {
        let customData = push.userInfo[PayloadDialect.canonical.customDataKey] as? [String: Any]
        if let list = customData?[PayloadDialect.referenceIDsKey] as? [String] { return list }
        return (customData?[PayloadDialect.canonical.referenceIDKey] as? String).map { [$0] } ?? []
    }
}
