import APNsSimulator
import Foundation
import Logging
import Prometheus
import RetractCore
import RetractKit
import RetractModel
import RetractServer
import RetractStore
import ServiceLifecycle

/// Step 6 of `retract demo`: the two common cases where APNs or iOS keeps
/// only the latest push, and what the phones show after each.
enum DemoLatestPush {
    /// A chat's phones: the app suspended, woken by iOS once for background
    /// pushes within 10 s of each other, with the latest.
    static let suspended = APNsSimulatedDevice.Phone(appState: .background, serviceExtension: .unfiltered, burstWindow: 10)

    static func run(engine: RetractEngine, app: App, apns: APNsSimulator, logger: Logger) async throws -> [String] {
        print("6. iOS and APNs keep only the latest push (docs/payload.md, \"Earlier retractions ride along\"):")
        var problems = try await burst(engine: engine, app: app, apns: apns)
        problems += try await offline(engine: engine, app: app, apns: apns, logger: logger)
        return problems
    }

    /// A chat message as the backend sends it, through its extension.
    static let message = Data(#"{"aps":{"alert":{"body":"See you at 8?"},"mutable-content":1}}"#.utf8)

    /// Two deletions 2 s apart on suspended phones: iOS hands each app only the second push.
    private static func burst(engine: RetractEngine, app: App, apns: APNsSimulator) async throws -> [String] {
        let phones = (0..<100).map { _ in DemoServices.randomToken(.apns) }
        let stamp = Int(Date().timeIntervalSince1970)
        let (m1, m2, m3) = (ReferenceID("chat-\(stamp)-m1"), ReferenceID("chat-\(stamp)-m2"), ReferenceID("chat-\(stamp)-m3"))
        for reference in [m1, m2, m3] {
            _ = try await engine.send(app: app, reference: reference, tokens: phones, payload: message, via: .apns)
        }
        _ = try await retract(m1, engine: engine, app: app)
        try await Task.sleep(for: .seconds(2))
        let second = try await retract(m2, engine: engine, app: app)
        var (coalesced, deleted, kept) = (0, 0, 0)
        for phone in phones {
            let screen = await APNsSimulatedDevice.replay(apns.inbox(for: phone.hex), on: suspended)
            let shown = Set(screen.showing.compactMap(\.referenceID))
            coalesced += screen.coalesced
            if shown.isDisjoint(with: [m1, m2]) { deleted += 1 }
            if shown.contains(m3) { kept += 1 }
        }
        print("   a. a chat on \(phones.count) phones with the app suspended: messages m1, m2, m3; m1 deleted, then m2 2 s later")
        print(
            "      iOS woke each app once, with the later push (\(coalesced) earlier pushes dropped); it carried m1 too "
                + "(\(second.historyCarried) earlier references rode along)")
        print("      m1 and m2 gone from \(deleted) of \(phones.count) phones; m3 still shows on \(kept)")
        return deleted == phones.count && kept == phones.count ? [] : ["\(phones.count - deleted) chat phones still show a deleted message"]
    }

    /// A phone offline through a deletion and the next message: APNs keeps
    /// only the message, whose extension reads the device feed.
    private static func offline(engine: RetractEngine, app: App, apns: APNsSimulator, logger: Logger) async throws -> [String] {
        let token = DemoServices.randomToken(.apns)
        let stamp = Int(Date().timeIntervalSince1970)
        let (m4, m5) = (ReferenceID("chat-\(stamp)-m4"), ReferenceID("chat-\(stamp)-m5"))
        let feed = try await DemoFeed.start(engine: engine, app: app, logger: logger)
        let screen: APNsSimulatedDevice.Screen
        do {
            let phone = SimulatedPhone(
                deviceToken: token.hex, on: apns, kind: suspended, feed: RetractionFeed(baseURL: feed.baseURL, apiKey: feed.clientKey))
            _ = try await engine.send(app: app, reference: m4, tokens: [token], payload: message, via: .apns)
            _ = await phone.settle()
            apns.takeOffline(deviceToken: token.hex)
            _ = try await retract(m4, engine: engine, app: app)
            _ = try await engine.send(app: app, reference: m5, tokens: [token], payload: message, via: .apns)
            apns.bringOnline(deviceToken: token.hex)
            screen = await phone.settle()
        } catch {
            await feed.stop()
            throw error
        }
        await feed.stop()
        var withoutFeed = suspended
        withoutFeed.offline = apns.phone(of: token.hex).offline
        let notCaughtUp = await APNsSimulatedDevice.replay(apns.inbox(for: token.hex), on: withoutFeed)
        let names = [m4: "m4", m5: "m5"]
        let shown = screen.showing.compactMap { $0.referenceID.flatMap { names[$0] } }
        let shownWithoutFeed = notCaughtUp.showing.compactMap { $0.referenceID.flatMap { names[$0] } }
        print("   b. a phone offline through the deletion of m4 and the next message, m5: APNs kept only m5 for it")
        print(
            "      its extension read the device feed (GET /v1/devices/{token}/retractions, from the API in this process): "
                + "the phone shows \(describe(shown)) (without the feed it would show \(describe(shownWithoutFeed)))")
        return shown == ["m5"] ? [] : ["the phone offline through a deletion shows \(describe(shown)), not m5 alone"]
    }

    private static func describe(_ names: [String]) -> String {
        names.isEmpty ? "nothing" : names.joined(separator: " and ")
    }

    private static func retract(_ reference: ReferenceID, engine: RetractEngine, app: App) async throws -> RetractionView {
        let (retraction, _) = try await engine.startRetraction(
            app: app, target: .references([reference]), requestedBy: "demo", reason: "deleted for everyone", mode: .background)
        return try await NotificationCommand.follow(retraction, app: app, engine: engine)
    }
}

/// Retract's API in this process, serving the device feed, with a `client`
/// key of the kind an app ships.
struct DemoFeed {
    var baseURL: URL
    var clientKey: String
    private var group: ServiceGroup
    private var running: Task<Void, any Error>

    static func start(engine: RetractEngine, app: App, keyName: String = "demo-ios-app", logger: Logger) async throws -> DemoFeed {
        let clientKey = APIKeySecret.generate()
        try await engine.store.createAPIKey(
            APIKeyRecord(
                name: keyName, keyHash: APIKeySecret.hash(clientKey), scopes: [.client], appIDs: [app.id], createdBy: "demo"))
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = RetractServer(
            engine: engine, settings: ServerSettings(port: 0, mode: .api), registry: PrometheusCollectorRegistry(), logger: logger
        ) { continuation.yield($0) }
        let group = ServiceGroup(services: [server], logger: logger)
        let running = Task {
            // Should it end before listening, the wait below ends too.
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            // It ended without listening: its error says why.
            try await running.value
            throw DemoCommand.DemoFailure(description: "the API ended before it listened")
        }
        return DemoFeed(baseURL: URL(string: "http://127.0.0.1:\(port)")!, clientKey: clientKey, group: group, running: running)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
    }
}
