import APNsSimulator
import ArgumentParser
import Foundation
import NIOCore
import RetractCore
import RetractDevSupport

/// `retract simulator`: the APNs simulator as a process, for the demo, the
/// benchmarks and other test suites.
struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator",
        abstract: "Run a simulated APNs (HTTP/2 over TLS) until stopped.",
        discussion: """
            It answers like APNs: it checks provider tokens against the keys given with --key \
            (without one, every token is refused; --accept-any-key takes any well-formed ES256 token), \
            validates paths, headers and bodies, and keeps what each device was sent, readable \
            over plain HTTP on --inbox-port (GET /inbox/<token>, GET /screen/<token>, GET /stats, \
            DELETE /inbox). GET /screen/<token> answers what the device's phone displays, with \
            iOS's rules for its kind (--phones, --service-extension, --background-budget, \
            --burst-window) and the same RetractKit code an app runs. POST /offline/<token> takes \
            the phone offline now and POST /online/<token> brings it back: as APNs does, only the \
            latest push sent in between reaches it, when it is back.

            The server certificate is made at start; its authority is written to \
            <cert-dir>/simulator-ca.pem for clients to trust. Each new way a provider token is \
            refused is explained once on standard error (APNs itself only answers a reason); \
            GET /stats counts them. docs/simulator.md walks through testing your own client.

            Exit codes: 0 stopped; 2 an argument file cannot be read; 3 the server cannot start.
            """
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The HTTP/2 port; 0 picks a free one.")
    var port = 2197

    @Option(help: "The plain-HTTP inbox port; 0 picks a free one. Off when not given.")
    var inboxPort: Int?

    @Option(help: "Where simulator-ca.pem is written.")
    var certDir: String = "."

    @Option(
        name: .customLong("key"),
        help: ArgumentHelp("A signing key to accept provider tokens from; repeatable.", valueName: "KEYID:TEAMID:PEM-FILE")
    )
    var keys: [String] = []

    @Flag(help: "Accept any well-formed ES256 provider token whose key id is not given with --key, without checking its signature.")
    var acceptAnyKey = false

    @Option(name: .customLong("topic"), help: "A topic to accept; repeatable. Any topic when not given.")
    var topics: [String] = []

    @Option(
        name: .customLong("unregistered"),
        help: ArgumentHelp("A token answered 410 Unregistered; repeatable.", valueName: "HEX[@UNIX-SECONDS]")
    )
    var unregistered: [String] = []

    @Option(name: .customLong("bad-token"), help: ArgumentHelp("A token answered 400 BadDeviceToken; repeatable.", valueName: "HEX"))
    var badTokens: [String] = []

    @Option(name: .customLong("rate-429"), help: "The fraction of requests answered 429 TooManyRequests.")
    var tooManyRequestsRate = 0.0

    @Option(name: .customLong("rate-503"), help: "The fraction of requests answered 503 ServiceUnavailable.")
    var serviceUnavailableRate = 0.0

    @Option(help: "The seed of the random faults.")
    var seed: UInt64 = 1

    @Option(help: "Send GOAWAY after this many streams on a connection.")
    var goawayAfter: Int?

    @Option(help: "Milliseconds added before every answer.")
    var latencyMs = 0

    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS.")
    var maxStreams = 1000

    @Flag(help: "Keep no inbox (for benchmarks).")
    var noInbox = false

    @Option(
        help: ArgumentHelp(
            "The phones the devices are, by share, each token given one by its hash: background, force-quit, low-power, over-budget (GET /screen/<token> shows what each displays).",
            valueName: "KIND=PERCENT,..."))
    var phones = "background=100"

    @Option(help: ArgumentHelp("The apps' Notification Service Extension: none, unfiltered or filtering.", valueName: "KIND"))
    var serviceExtension: APNsSimulatedDevice.Phone.ServiceExtension = .none

    @Option(help: ArgumentHelp("Background pushes iOS hands an app in any hour.", valueName: "N"))
    var backgroundBudget = 3

    @Option(
        help: ArgumentHelp(
            "Of background pushes to a suspended app this close together, only the latest is handed over: iOS wakes the app once for a burst. 0 hands every one over.",
            valueName: "SECONDS"))
    var burstWindow: TimeInterval = 10

    @Option(
        help: ArgumentHelp(
            "The iOS the phones run: passive alerts light no screen from 15, the filtering entitlement hides alerts from 13.3.",
            valueName: "VERSION"))
    var iosVersion = IOSVersion.current.description

    func run() async throws {
        // Scripts read the port from the first line, often through a file.
        lineBufferStandardOutput()
        var tokenKeys: [APNsSimulatorTokenKey] = []
        var unregisteredTokens: [String: Date] = [:]
        let phoneMix: APNsPhoneMix
        do {
            guard let version = IOSVersion(iosVersion) else {
                throw RetractError(.invalidInput, "--ios-version \(iosVersion): an iOS version such as 17.0")
            }
            phoneMix = try Self.phoneMix(
                phones, serviceExtension: serviceExtension, budget: backgroundBudget, burstWindow: burstWindow, iOSVersion: version)
            for key in keys {
                let parts = key.split(separator: ":", maxSplits: 2).map(String.init)
                guard parts.count == 3 else { throw RetractError(.invalidInput, "--key \(key): expected KEYID:TEAMID:PEM-FILE") }
                let file = InputFile(path: parts[2])
                let pem = try file.text()
                do {
                    tokenKeys.append(try APNsSimulatorTokenKey(keyID: parts[0], teamID: parts[1], pem: pem))
                } catch {
                    throw file.problem("not a P-256 key in PEM form")
                }
            }
            for entry in unregistered {
                let parts = entry.split(separator: "@", maxSplits: 1)
                guard let token = parts.first, DeviceTokenText.isHex(token) else {
                    throw RetractError(.invalidInput, "--unregistered \(entry): expected HEX[@UNIX-SECONDS]")
                }
                let since = parts.count == 2 ? TimeInterval(parts[1]).map(Date.init(timeIntervalSince1970:)) : Date()
                guard let since else { throw RetractError(.invalidInput, "--unregistered \(entry): the time is not a number of seconds") }
                unregisteredTokens[token.lowercased()] = since
            }
        } catch {
            printError("retract simulator: \(error)")
            throw ExitCode(2)
        }
        let faults = APNsSimulatorFaults(
            unregisteredTokens: unregisteredTokens,
            badDeviceTokens: Set(badTokens.map { $0.lowercased() }),
            tooManyRequestsRate: tooManyRequestsRate,
            serviceUnavailableRate: serviceUnavailableRate,
            seed: seed,
            goAwayAfterStreams: goawayAfter,
            latency: .milliseconds(Int64(latencyMs)),
            maxConcurrentStreams: maxStreams
        )
        let simulator: APNsSimulator
        do {
            simulator = try await APNsSimulator.start(
                APNsSimulatorConfiguration(
                    host: host,
                    port: port,
                    inboxPort: inboxPort,
                    tls: .selfSigned(writingTo: URL(fileURLWithPath: certDir)),
                    tokenKeys: tokenKeys,
                    acceptsAnyTokenKey: acceptAnyKey,
                    onTokenRefused: { printError("retract simulator: refused a provider token: \($0)") },
                    topics: topics.isEmpty ? nil : Set(topics),
                    faults: faults,
                    recordsInbox: !noInbox,
                    phones: phoneMix
                )
            )
        } catch {
            printError("retract simulator: cannot start on \(host):\(port): \(error)")
            throw ExitCode(3)
        }
        let caPath = URL(fileURLWithPath: certDir).appendingPathComponent("simulator-ca.pem").path
        print("APNs simulator on https://\(host):\(simulator.port) (trust \(caPath))")
        if let inboxPort = simulator.inboxPort { print("inbox on http://\(host):\(inboxPort)") }
        if let warning = Self.keyWarning(keys: tokenKeys.map(\.keyID), acceptsAnyKey: acceptAnyKey) {
            printError("retract simulator: \(warning)")
        }
        try await simulator.waitUntilStopped()
    }

    /// What to say at start about the provider tokens that will be accepted.
    static func keyWarning(keys: [String], acceptsAnyKey: Bool) -> String? {
        if acceptsAnyKey {
            return keys.isEmpty
                ? "--accept-any-key: any well-formed ES256 provider token is accepted, and no signature is checked"
                : "--accept-any-key: tokens of key \(keys.joined(separator: ", ")) are verified; any other well-formed ES256 token is accepted unchecked"
        }
        guard keys.isEmpty else { return nil }
        return "no --key given: every provider token will be refused with 403 InvalidProviderToken. "
            + "Give --key KEYID:TEAMID:PEM-FILE for the key your client signs with, or --accept-any-key to accept any well-formed ES256 token"
    }

    /// `background=80,force-quit=15,over-budget=5` as a mix of phones.
    static func phoneMix(
        _ text: String, serviceExtension: APNsSimulatedDevice.Phone.ServiceExtension, budget: Int, burstWindow: TimeInterval = 0,
        iOSVersion: IOSVersion = .current
    ) throws(RetractError) -> APNsPhoneMix {
        guard budget >= 0 else { throw RetractError(.invalidInput, "--background-budget \(budget): 0 or more") }
        guard burstWindow >= 0, burstWindow.isFinite else {
            throw RetractError(.invalidInput, "--burst-window \(burstWindow): 0 or more seconds")
        }
        var shares: [APNsPhoneMix.Share] = []
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, let weight = Int(pair[1]), weight >= 0 else {
                throw RetractError(.invalidInput, "--phones \(part): expected KIND=PERCENT, such as force-quit=15")
            }
            var phone = APNsSimulatedDevice.Phone(
                serviceExtension: serviceExtension, backgroundBudget: budget, burstWindow: burstWindow, iOSVersion: iOSVersion)
            switch pair[0] {
            case "over-budget": phone.backgroundBudget = 0
            case let kind:
                guard let state = APNsSimulatedDevice.Phone.AppState(rawValue: kind) else {
                    throw RetractError(
                        .invalidInput, "--phones \(part): \"\(kind)\" is not background, force-quit, low-power or over-budget")
                }
                phone.appState = state
            }
            shares.append(APNsPhoneMix.Share(phone, weight: weight))
        }
        guard shares.contains(where: { $0.weight > 0 }) else { throw RetractError(.invalidInput, "--phones \(text): no share above 0") }
        return APNsPhoneMix(shares: shares)
    }
}

extension APNsSimulatedDevice.Phone.ServiceExtension: ExpressibleByArgument {}

enum DeviceTokenText {
    static func isHex(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.count.isMultiple(of: 2) && text.allSatisfy(\.isHexDigit)
    }
}
