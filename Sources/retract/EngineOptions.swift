import ArgumentParser
import Foundation
import Logging
import NIOCore
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// How a command that sends pushes reaches APNs and how hard it pushes.
struct EngineOptions: ParsableArguments {
    @Option(
        name: .customLong("apns-ca"),
        help: ArgumentHelp(
            "A PEM root certificate to trust besides the system's, for a private endpoint or the simulator; APNS_CA_FILE when not given.",
            valueName: "FILE")
    )
    var apnsCA: String?

    @Option(
        name: .customLong("fcm-endpoint"),
        help: ArgumentHelp(
            "An https:// base URL to send FCM messages to instead of Google's; FCM_ENDPOINT when not given.", valueName: "URL")
    )
    var fcmEndpoint: String?

    @Option(
        name: .customLong("fcm-ca"),
        help: ArgumentHelp("A PEM root certificate to trust for FCM and its token endpoint; FCM_CA_FILE when not given.", valueName: "FILE")
    )
    var fcmCA: String?

    @Option(
        help:
            "The most pushes in flight at once; within it each app's window sizes itself to APNs's round trip, from 400 up (default 5000).")
    var window: Int?

    @Option(help: "The most HTTP/2 connections per app; two at first, more as its window needs them (default 8).")
    var connections: Int?

    @Option(
        help: ArgumentHelp(
            "Minutes a device answered with retryable errors (429, 5xx, a lost connection) is tried again before it counts as failed; time the service cannot be reached at all does not count (default 30).",
            valueName: "MINUTES"))
    var retryBudget: Int?

    @Option(
        help: ArgumentHelp(
            "Claims of one work item that end without a result (a crashed worker, a result the database refuses) before its devices count as failed (default 8).",
            valueName: "N"))
    var itemAttempts: Int?

    @Option(
        help: ArgumentHelp(
            "The first retry's delay cap in milliseconds; it doubles per attempt, up to 30 s (default 250).", valueName: "MS"))
    var retryBaseDelay: Int?

    @Option(
        help: ArgumentHelp(
            "Hours back a device's earlier retractions in the same app ride along in its retraction pushes, the newest that fit the 4 KB body; 0 for none (default 24).",
            valueName: "HOURS"))
    var historyHours: Int?

    @Flag(help: "Log what the engine does (info level) to stderr.")
    var verbose = false

    func settings(lease: Int? = nil) throws(RetractError) -> EngineSettings {
        var settings = EngineSettings()
        if let window { settings.window = window }
        if let lease { settings.lease = .seconds(lease) }
        if let retryBudget {
            guard (0...10_080).contains(retryBudget) else {
                throw RetractError(.invalidInput, "--retry-budget \(retryBudget): 0 to 10080 minutes")
            }
            settings.retryBudget = .seconds(retryBudget * 60)
        }
        if let itemAttempts { settings.itemAttempts = itemAttempts }
        if let historyHours {
            guard (0...168).contains(historyHours) else {
                throw RetractError(.invalidInput, "--history-hours \(historyHours): 0 to 168 hours")
            }
            settings.historyWindow = .seconds(historyHours * 3600)
        }
        if let retryBaseDelay {
            guard (1...60_000).contains(retryBaseDelay) else {
                throw RetractError(.invalidInput, "--retry-base-delay \(retryBaseDelay): 1 to 60000 ms")
            }
            settings.retryPolicy.baseDelay = .milliseconds(retryBaseDelay)
        }
        if let problem = settings.problem { throw RetractError(.invalidInput, "--\(problem)") }
        if let connections, !(1...64).contains(connections) {
            throw RetractError(.invalidInput, "--connections \(connections): 1 to 64")
        }
        return settings
    }

    func apnsSettings(environment: [String: String] = ProcessInfo.processInfo.environment) throws(RetractError) -> APNsSettings {
        var settings = APNsSettings()
        if let connections { settings.connectionsPerApp = connections }
        settings.certificatePassphrase = Self.certificatePassphrase(environment)
        if let pem = try Self.certificate(apnsCA ?? environment["APNS_CA_FILE"], flag: "--apns-ca") {
            settings.additionalTrustRootsPEM = [pem]
        }
        return settings
    }

    /// The passphrase of PKCS#12 client certificates: `APNS_CERTIFICATE_PASSPHRASE`.
    static func certificatePassphrase(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        environment["APNS_CERTIFICATE_PASSPHRASE"]
    }

    /// How FCM is reached.
    func fcmSettings(environment: [String: String] = ProcessInfo.processInfo.environment) throws(RetractError) -> FCMSettings {
        var settings = FCMSettings()
        if let endpoint = fcmEndpoint ?? environment["FCM_ENDPOINT"], !endpoint.isEmpty {
            guard let url = URL(string: endpoint), url.scheme == "https", url.host != nil, !endpoint.containsControlCharacters else {
                throw RetractError(.invalidInput, "--fcm-endpoint \"\(endpoint.prefix(200))\": an https:// URL")
            }
            settings.messagesBaseURL = endpoint
        }
        if let pem = try Self.certificate(fcmCA ?? environment["FCM_CA_FILE"], flag: "--fcm-ca") {
            settings.additionalTrustRootsPEM = [pem]
        }
        return settings
    }

    /// The PEM certificate at `path`, checked to be one.
    private static func certificate(_ path: String?, flag: String) throws(RetractError) -> String? {
        guard let path, !path.isEmpty else { return nil }
        let pem: String
        do {
            pem = try InputFile(path: path).text()
        } catch {
            throw RetractError(.invalidInput, "\(flag) \(error)")
        }
        guard pem.contains("-----BEGIN CERTIFICATE-----") else {
            throw RetractError(.invalidInput, "\(flag) \(path): not a PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return pem
    }

    var logger: Logger {
        var logger = Logger(label: "retract")
        logger.logLevel = verbose ? .info : .warning
        return logger
    }

    /// Runs `body` with an engine on the database, closing its APNs connections afterwards.
    func withEngine<Result: Sendable>(
        _ database: DatabaseOptions,
        lease: Int? = nil,
        _ body: (RetractEngine) async throws -> Result
    ) async throws -> Result {
        let settings = try settings(lease: lease)
        let transports = PushTransports(settings: try apnsSettings(), fcm: try fcmSettings(), logger: logger)
        let logger = logger
        return try await database.withStore { store in
            let engine = RetractEngine(store: store, transports: transports, settings: settings, logger: logger)
            do {
                let result = try await body(engine)
                await transports.shutdown()
                return result
            } catch {
                await transports.shutdown()
                throw error
            }
        }
    }
}

/// Device tokens from `--token` flags and a `--tokens-file`, of one push service.
struct TokenOptions: ParsableArguments {
    @Option(
        name: .customLong("token"),
        help: ArgumentHelp("A device token: hex for APNs, the registration token for FCM; repeatable.", valueName: "TOKEN"))
    var tokens: [String] = []

    @Option(
        name: .customLong("tokens-file"),
        help: ArgumentHelp("A file of device tokens, one per line ('#' starts a comment); - reads stdin.", valueName: "FILE")
    )
    var tokensFile: String?

    @Option(help: "apns (tokens in hex) or fcm (FCM registration tokens): the service the devices are reached through.")
    var transport: PushService = .apns

    func read() throws(RetractError) -> [DeviceToken] {
        var parsed: [DeviceToken] = []
        for (index, text) in tokens.enumerated() {
            parsed.append(try token(text, at: "--token #\(index + 1)"))
        }
        if let tokensFile {
            let text: String
            if tokensFile == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                do {
                    text = try InputFile(path: tokensFile).text()
                } catch {
                    throw RetractError(.invalidInput, "--tokens-file \(error)")
                }
            }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let trimmed = content.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty { continue }
                parsed.append(try token(trimmed, at: "\(tokensFile == "-" ? "stdin" : tokensFile) line \(number + 1)"))
            }
        }
        guard !parsed.isEmpty else { throw RetractError(.invalidInput, "no device tokens: give --token or --tokens-file") }
        return parsed
    }

    private func token(_ text: String, at place: String) throws(RetractError) -> DeviceToken {
        guard let token = transport.token(text) else { throw RetractError(.invalidInput, "\(place): \(transport.tokenProblem(text))") }
        return token
    }
}

extension PushService: ExpressibleByArgument {}
