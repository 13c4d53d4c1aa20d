import APNsSimulator
import ArgumentParser
import Crypto
import FCMSimulator
import Foundation
import Logging
import RetractCore
import RetractDevSupport
import RetractKit
import RetractModel
import RetractStore

/// `retract demo`: the whole job on a machine with nothing running.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Send a notification to simulated devices, retract it, and show what they display.",
        discussion: """
            Without DATABASE_URL (or --database-url) it starts a throwaway PostgreSQL in a temp \
            folder and removes it at exit. It runs the migrations, starts the APNs simulator \
            (TLS, token auth) or, with --transport fcm, the FCM simulator (TLS, a service account's \
            OAuth2 tokens), or both with --transport mixed; registers a demo app, sends a \
            notification to --devices simulated devices, lets --uninstalled of them uninstall the \
            app (APNs then answers 410, FCM UNREGISTERED), \
            retracts the notification with a progress bar, first in background mode and then in \
            service-extension mode, and replays what every device received: iPhones (APNs) through \
            RetractKit, with iOS's rules for each phone's state (80% with the app in the background, \
            15% force-quit, 5% over their background-push budget); Android phones (FCM) through \
            RetractKit for Android, the Java library in clients/android run as a process, with \
            FCM's and Android's rules (80% with the app in the background, 15% force-stopped once \
            the notification showed, 5% in Doze with the app's high priority lowered by Firebase), \
            to show what each mode leaves on screen. Android phones need a JDK 11 or later: the \
            library is built with scripts/android-test --build when it is not yet.

            Ctrl-C stops the throwaway PostgreSQL and removes its folder before exiting.

            Exit codes: 0 every reached device removed the notification after the \
            service-extension retraction (an Android phone is reached unless its app is \
            force-stopped or Doze holds the retraction); 1 one did not, or the \
            demo could not run; 2 a malformed database URL; 4 the given database cannot be \
            reached; 64 a bad argument.
            """
    )

    @Option(help: "Simulated devices the notification goes to.")
    var devices = 5000

    @Option(help: "Of those, devices that uninstall the app before the retraction.")
    var uninstalled = 12

    @Option(help: "How the devices are reached: apns, fcm (Firebase Cloud Messaging), or mixed (half each).")
    var transport: DemoTransport = .apns

    @OptionGroup var database: DatabaseOptions

    func validate() throws {
        guard (1...1_000_000).contains(devices) else { throw ValidationError("--devices \(devices): 1 to 1000000") }
        guard (0..<devices).contains(uninstalled) else {
            throw ValidationError("--uninstalled \(uninstalled): 0 to fewer than --devices")
        }
    }

    func run() async throws {
        // Lines in order with the progress on stderr, even into a pipe.
        lineBufferStandardOutput()
        SignalCleanup.shared.install()
        var postgres: ThrowawayPostgres?
        do {
            let url: DatabaseURL
            let ledger: String
            if let given = try database.givenURL() {
                url = given
                ledger = "PostgreSQL at \(url.host):\(url.port) (DATABASE_URL)"
            } else {
                print("Starting a throwaway PostgreSQL…")
                let started = try ThrowawayPostgres.start()
                postgres = started
                url = try DatabaseURL(started.url)
                ledger = "throwaway PostgreSQL on 127.0.0.1:\(started.port), removed at exit"
            }
            try await Self.demo(url: url, ledger: ledger, devices: devices, uninstalled: uninstalled, transport: transport)
            postgres?.stop()
        } catch {
            postgres?.stop()
            throw fail("demo", error)
        }
    }

    private static func demo(url: DatabaseURL, ledger: String, devices: Int, uninstalled: Int, transport: DemoTransport) async throws {
        var logger = Logger(label: "retract.demo")
        logger.logLevel = .warning
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("retract-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // It holds the demo's signing keys: gone at exit, even after Ctrl-C.
        let cleanup = SignalCleanup.shared.add { try? FileManager.default.removeItem(at: folder) }
        defer {
            SignalCleanup.shared.remove(cleanup)
            try? FileManager.default.removeItem(at: folder)
        }
        let services = try await DemoServices.start(transport, in: folder)
        do {
            try await run(url: url, ledger: ledger, devices: devices, uninstalled: uninstalled, services: services, logger: logger)
            await services.stop()
        } catch {
            await services.stop()
            throw error
        }
    }

    private static func run(
        url: DatabaseURL, ledger: String, devices: Int, uninstalled: Int, services: DemoServices, logger: Logger
    ) async throws {
        try await RetractStore.withStore(url: url, maximumConnections: 8, logger: logger) { store in
            try await MigrationRunner().migrate(store)
            let transports = services.transports(logger: logger)
            let engine = RetractEngine(store: store, transports: transports, logger: logger)
            do {
                let app = try await engine.registerApp(
                    services.registration(name: "demo-\(UUID().uuidString.prefix(6).lowercased())"), actor: "demo")
                try await demo(
                    engine: engine, app: app, ledger: ledger, devices: devices, uninstalled: uninstalled, services: services, logger: logger
                )
                await transports.shutdown()
            } catch {
                await transports.shutdown()
                throw error
            }
        }
    }

    private static func demo(
        engine: RetractEngine, app: App, ledger: String, devices: Int, uninstalled: Int, services: DemoServices, logger: Logger
    ) async throws {
        print("Retract demo")
        print("  ledger   \(ledger)")
        for line in services.descriptions { print("  \(line)") }
        print("  app      \(app.name) (\(app.topic))")

        // 1. The original, to every device, recorded as it goes out through each device's service.
        let reference = ReferenceID("spring-sale-\(Int(Date().timeIntervalSince1970))")
        let devicesByService = services.makeDevices(devices)
        let tokens = devicesByService.flatMap(\.tokens)
        let payload = Data(#"{"aps":{"alert":{"title":"Spring sale","body":"Everything 50% off, today only"},"sound":"default"}}"#.utf8)
        let clock = ContinuousClock()
        let sendStart = clock.now
        var accepted = 0
        for (service, serviceTokens) in devicesByService where !serviceTokens.isEmpty {
            accepted += try await engine.send(app: app, reference: reference, tokens: serviceTokens, payload: payload, via: service)
                .accepted
        }
        let split =
            devicesByService.count > 1
            ? " (\(devicesByService.map { "\($0.tokens.count) through \($0.service)" }.joined(separator: ", ")))" : ""
        print(
            "\n1. sent \"Spring sale\" (\(reference)) to \(devices) devices\(split): \(accepted) accepted in \(format(clock.now - sendStart)), every device recorded in the ledger"
        )

        // 2. Some users uninstall the app; the push service refuses their tokens from now on.
        let gone = Array(devicesByService.flatMap { group in group.tokens.map { (group.service, $0) } }.shuffled().prefix(uninstalled))
        for (service, token) in gone { services.uninstall(token, of: service) }
        print("2. \(uninstalled) devices uninstalled the app; APNs now answers 410 Unregistered, FCM UNREGISTERED, for them")
        // Some Android users swipe the app away once the notification shows: FCM delivers nothing more to it.
        let forceStop = Date()
        let before = try await services.showing(reference, on: devicesByService, forceStop: forceStop).all
        let reached = Set(tokens).subtracting(gone.map(\.1))
        var androidUnreached: [DemoServices.AndroidUnreached: Set<DeviceToken>] = [:]
        for (index, service, token) in DemoServices.numbered(devicesByService) where service == .fcm {
            if let why = DemoServices.androidPhoneUnreached(at: index) { androidUnreached[why, default: []].insert(token) }
        }

        // 3. The retraction in the default mode, a silent background push, sent by a worker in this process.
        print("3. retract notification \(reference)   (background mode: a silent push RetractKit handles)")
        let (retraction, _) = try await engine.startRetraction(
            app: app, target: .references([reference]), requestedBy: "demo", reason: "sent by mistake", requireRecorded: true,
            mode: .background)
        let account = try await NotificationCommand.follow(retraction, app: app, engine: engine)
        print(account.printed.split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))
        let afterBackground = try await services.showing(reference, on: devicesByService, forceStop: forceStop)

        // 4. Again as an alert for the app's Notification Service Extension, which iOS runs on every phone.
        let extensionNote =
            devicesByService.contains { $0.service == .fcm } ? "; on Android a data message, as in background mode" : ""
        print(
            "4. retract notification \(reference) --mode service-extension   (an alert the app's extension turns into a removal\(extensionNote))"
        )
        let (second, _) = try await engine.startRetraction(
            app: app, target: .references([reference]), requestedBy: "demo", reason: "sent by mistake", mode: .serviceExtension)
        let secondAccount = try await NotificationCommand.follow(second, app: app, engine: engine)
        print(secondAccount.printed.split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))
        let afterExtension = try await services.showing(reference, on: devicesByService, forceStop: forceStop)

        // 5. What the phones show now, worked out by each platform's RetractKit from what each received, in its state.
        print("5. what the phones show (what each phone received, its platform's rules for its state, and RetractKit applied):")
        let platforms = devicesByService.map(\.service)
        if platforms.contains(.apns) {
            print("   iPhones (RetractKit): 80% with the app in the background, 15% force-quit, 5% over their background-push budget;")
            print("           each app has a Notification Service Extension without the filtering entitlement")
        }
        if platforms.contains(.fcm) {
            print("   Android phones (RetractKit for Android, the Java library run as a process): 80% with the app in the background,")
            print("           15% force-stopped once the notification showed, 5% in Doze with the app's high priority lowered by Firebase")
        }
        print("   before the retraction: \(before.count) of \(devices) devices showed \"Spring sale\"")
        for (step, screens) in [("after background mode:", afterBackground), ("after service-extension mode:", afterExtension)] {
            print("   \(step)")
            if platforms.contains(.apns) {
                let showing = screens.original[.apns, default: []].intersection(reached)
                let iPhones = reached.intersection(devicesByService.first { $0.service == .apns }?.tokens ?? [])
                let why =
                    screens.notices > 0
                    ? "\(screens.notices) show \"\(RetractionMode.defaultText)\" in its place, "
                        + (screens.woken == 0
                            ? "and no screen lit for it: the carriers are passive" : "\(screens.woken) lit the screen for it")
                    : showing.isEmpty ? "none" : "force-quit or throttled: iOS never handed the app the silent push"
                print(
                    "     iPhones:        \(iPhones.count - showing.count) of the \(iPhones.count) reachable removed it; \(showing.count) still show it (\(why))"
                )
            }
            if platforms.contains(.fcm) {
                let showing = screens.original[.fcm, default: []].intersection(reached)
                let phones = reached.intersection(devicesByService.first { $0.service == .fcm }?.tokens ?? [])
                let stopped = showing.intersection(androidUnreached[.forceStopped, default: []]).count
                let dozing = showing.intersection(androidUnreached[.dozing, default: []]).count
                let others = showing.count - stopped - dozing
                let why =
                    showing.isEmpty
                    ? "none"
                    : "\(stopped) force-stopped: FCM delivers nothing to them; \(dozing) in Doze: Firebase lowered the retraction to normal "
                        + "priority, which waits for a maintenance window"
                        + (others > 0 ? "; \(others) that got it" : "")
                print(
                    "     Android phones: \(phones.count - showing.count) of the \(phones.count) reachable removed it; \(showing.count) still show it (\(why))"
                )
            }
        }
        var androidLater: Set<DeviceToken> = []
        if platforms.contains(.fcm) {
            // The Android phones no push reached: Doze lets the held retraction through; an opened app reads the feed.
            let feed = try await DemoFeed.start(engine: engine, app: app, keyName: "demo-android-app", logger: logger)
            do {
                androidLater = try services.androidShowingLater(
                    reference, on: devicesByService, forceStop: forceStop,
                    feed: AndroidReplay.Feed(baseURL: feed.baseURL, apiKey: feed.clientKey))
            } catch {
                await feed.stop()
                throw error
            }
            await feed.stop()
            let waiting = afterExtension.original[.fcm, default: []].intersection(reached)
            print(
                "   later, on the Android phones: Doze's maintenance window comes, and the force-stopped apps are opened and read the "
                    + "device feed (GET /v1/devices/{token}/retractions?transport=fcm, from the API in this process):")
            print(
                "     Android phones: \(waiting.count - waiting.intersection(androidLater).count) of the \(waiting.count) that still showed it "
                    + "removed it; \(androidLater.intersection(reached).count) still show it")
        }
        print(
            "   unregistered: \(account.unregistered) tokens marked dead in the ledger (the app is gone from those devices); later retractions skip them"
        )
        // Every iPhone reached, and every Android phone whose app FCM could hand the retraction, removed it;
        // the others once Doze let it through or the app read the feed at its start.
        let stillShowing = afterExtension.all.intersection(reached).subtracting(
            androidUnreached.values.reduce(into: []) { $0.formUnion($1) }
        )
        .union(androidLater.intersection(reached))
        guard stillShowing.isEmpty, account.exitCode == 0, secondAccount.exitCode == 0 else {
            throw DemoFailure(description: "\(stillShowing.count) reachable devices still show the notification")
        }

        // 6. The two cases where APNs or iOS keeps only the latest push; iPhones only.
        guard let apns = services.apns?.simulator else { return }
        let problems = try await DemoLatestPush.run(engine: engine, app: app, apns: apns, logger: logger)
        guard problems.isEmpty else { throw DemoFailure(description: problems.joined(separator: "; ")) }
    }

    private static func format(_ duration: Duration) -> String {
        String(format: "%.2fs", duration.inSeconds)
    }

    struct DemoFailure: Error, CustomStringConvertible {
        var description: String
    }
}
