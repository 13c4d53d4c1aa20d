import APNsSimulator
import ArgumentParser
import Crypto
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
            service-extension mode, and replays what every device received through RetractKit, \
            with iOS's rules for each phone's state (80% with the app in the background, 15% \
            force-quit, 5% over their background-push budget), to show what each mode leaves on \
            screen.

            Ctrl-C stops the throwaway PostgreSQL and removes its folder before exiting.

            Exit codes: 0 every reached device removed the notification after the \
            service-extension retraction; 1 one did not, or the \
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
        let before = await services.showing(reference, on: devicesByService).original
        let reached = Set(tokens).subtracting(gone.map(\.1))

        // 3. The retraction in the default mode, a silent background push, sent by a worker in this process.
        print("3. retract notification \(reference)   (background mode: a silent push RetractKit handles)")
        let (retraction, _) = try await engine.startRetraction(
            app: app, target: .references([reference]), requestedBy: "demo", reason: "sent by mistake", requireRecorded: true,
            mode: .background)
        let account = try await NotificationCommand.follow(retraction, app: app, engine: engine)
        print(account.text.split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))
        let afterBackground = await services.showing(reference, on: devicesByService).original.intersection(reached)

        // 4. Again as an alert for the app's Notification Service Extension, which iOS runs on every phone.
        print("4. retract notification \(reference) --mode service-extension   (an alert the app's extension turns into a removal)")
        let (second, _) = try await engine.startRetraction(
            app: app, target: .references([reference]), requestedBy: "demo", reason: "sent by mistake", mode: .serviceExtension)
        let secondAccount = try await NotificationCommand.follow(second, app: app, engine: engine)
        print(secondAccount.text.split(separator: "\n").map { "   " + $0 }.joined(separator: "\n"))
        let afterExtension = await services.showing(reference, on: devicesByService)
        let stillShowing = afterExtension.original.intersection(reached)

        // 5. What the phones show now, worked out by RetractKit from what each received, with iOS's rules for its state.
        print("5. what the phones show (RetractKit applied to what each received, iOS's rules for each phone's state):")
        print("   phones: 80% with the app in the background, 15% force-quit, 5% over their background-push budget;")
        print("           each app has a Notification Service Extension without the filtering entitlement")
        print("   before the retraction: \(before.count) of \(devices) devices showed \"Spring sale\"")
        print(
            "   after background mode:        \(reached.count - afterBackground.count) of the \(reached.count) reachable devices removed it; "
                + "\(afterBackground.count) still show it (force-quit or throttled: iOS never handed the app the silent push)")
        print(
            "   after service-extension mode: \(reached.count - stillShowing.count) of the \(reached.count) reachable devices removed it; "
                + "\(stillShowing.count) still show it (\(afterExtension.notices) show \"\(RetractionMode.defaultText)\" in its place)")
        print(
            "   unregistered: \(account.unregistered) tokens marked dead in the ledger (the app is gone from those devices); later retractions skip them"
        )
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
