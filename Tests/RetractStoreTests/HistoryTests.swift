import Foundation
import PostgresNIO
import RetractKit
import RetractStore
import RetractTestSupport
import Testing

/// What a page of devices had retracted recently: what rides along in their
/// retraction pushes (docs/engine.md, "Earlier retractions ride along").
@Suite("Recent retractions per device")
struct HistoryTests {
    @Test func aPageOfDevicesGetsItsOwnRecentRetractionsNewestFirstInOneRead() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let other = try await Fixture.registerApp(store, name: "other")
            try await store.record(
                Fixture.deliveries(app: chat, reference: "m1", tokens: 0..<3)
                    + Fixture.deliveries(app: chat, reference: "m2", tokens: 0..<2)
                    + Fixture.deliveries(app: chat, reference: "m3", tokens: [0])
                    + Fixture.deliveries(app: chat, reference: "m4", tokens: [1])
                    + Fixture.deliveries(app: chat, reference: "m5", tokens: [0])
                    + Fixture.deliveries(app: other, reference: "m9", tokens: [0]))
            func retract(_ references: [ReferenceID], app: App = chat, dryRun: Bool = false) async throws -> UUID {
                try await store.createRetraction(
                    RetractionRequest(appID: app.id, references: references, requestedBy: "tests", dryRun: dryRun)
                ).0.id
            }
            _ = try await retract(["m1"])
            // Later transactions, later times: m2 and m4 are newer than m1.
            try await Task.sleep(for: .milliseconds(20))
            _ = try await retract(["m2", "m4"])
            _ = try await retract(["m5"], dryRun: true)
            _ = try await retract(["m9"], app: other)
            try await Task.sleep(for: .milliseconds(20))
            let current = try await retract(["m3"])

            // The list passed to the read, and (more recent references than the limit) joined by PostgreSQL.
            for listLimit in [1_000, 1] {
                let found = try await store.recentlyRetractedReferences(
                    appID: chat.id, devices: (0..<4).map(Fixture.token), since: Date().addingTimeInterval(-3600), excluding: current,
                    listLimit: listLimit)
                // Newest first; the dry run, the other app, the current retraction and devices with none are left out.
                #expect(
                    found == [Fixture.token(0): ["m2", "m1"], Fixture.token(1): ["m2", "m4", "m1"], Fixture.token(2): ["m1"]],
                    "list limit \(listLimit)")
            }

            // Outside the window: nothing.
            let none = try await store.recentlyRetractedReferences(
                appID: chat.id, devices: (0..<4).map(Fixture.token), since: Date().addingTimeInterval(60), excluding: current)
            #expect(none.isEmpty)
        }
    }

    /// Devices with the same references get one array between them, whatever
    /// order they received them in and however often.
    @Test func devicesWithTheSameHistoryShareItAndARepeatCountsOnce() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            let yesterday = Date().addingTimeInterval(-86_400)
            try await store.record(
                Fixture.deliveries(app: chat, reference: "m2", tokens: [5])
                    + Fixture.deliveries(app: chat, reference: "m1", tokens: [5, 6])
                    + Fixture.deliveries(app: chat, reference: "m2", tokens: [6])
                    // m1 reached token 5 on two days too; token 7 got m1 only.
                    + Fixture.deliveries(app: chat, reference: "m1", tokens: [5, 7], at: yesterday))
            _ = try await store.createRetraction(RetractionRequest(appID: chat.id, references: ["m1"], requestedBy: "tests"))
            try await Task.sleep(for: .milliseconds(20))
            _ = try await store.createRetraction(RetractionRequest(appID: chat.id, references: ["m2"], requestedBy: "tests"))
            let current = try await store.createRetraction(RetractionRequest(appID: chat.id, references: ["m3"], requestedBy: "tests")).0.id

            let joined = try await store.recentlyRetractedReferences(
                appID: chat.id, devices: [5, 6, 7].map(Fixture.token), since: Date().addingTimeInterval(-3600), excluding: current,
                listLimit: 1)
            #expect(joined == [Fixture.token(5): ["m2", "m1"], Fixture.token(6): ["m2", "m1"], Fixture.token(7): ["m1"]])
            let found = try await store.recentlyRetractedReferences(
                appID: chat.id, devices: [5, 6, 7].map(Fixture.token), since: Date().addingTimeInterval(-3600), excluding: current)
            #expect(found == joined)
            // One array for the two devices with the same history: it compares equal without looking at its elements.
            let shared = try #require(found[Fixture.token(5)])
            let other = try #require(found[Fixture.token(6)])
            #expect(shared.withUnsafeBufferPointer { $0.baseAddress } == other.withUnsafeBufferPointer { $0.baseAddress })
        }
    }

    @Test func aRetractionCountsWhatRodeAlongAndWhatWasLeftOut() async throws {
        try await TestDatabase.withStore { store, _ in
            let chat = try await Fixture.registerApp(store)
            try await store.record(Fixture.deliveries(app: chat, reference: "m1", tokens: 0..<2))
            let (retraction, _) = try await store.createRetraction(
                RetractionRequest(appID: chat.id, references: ["m1"], requestedBy: "tests"))
            let item = try #require(try await store.claimWork(worker: "tests", limit: 1, lease: .seconds(60)).first)
            _ = try await store.finish([
                WorkResult(
                    item: item, counts: RetractionCounts(sent: 2),
                    pushes: PushesSent(total: 2, mostToOneDevice: 1, historyCarried: 30, historyLeftOut: 7))
            ])
            let account = try #require(try await store.retraction(id: retraction.id))
            #expect(account.pushes == PushesSent(total: 2, mostToOneDevice: 1, historyCarried: 30, historyLeftOut: 7))
        }
    }
}
