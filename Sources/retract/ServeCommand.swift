import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import RetractCore
import RetractDevSupport
import RetractModel
import RetractServer
import RetractStore

/// `retract serve`: the HTTP API and the fan-out workers.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP API and the fan-out workers.",
        discussion: """
            Applies pending migrations, then serves the API (docs/api.md) and sends the pushes of \
            queued retractions. Any number of servers can share one database. SIGTERM or SIGINT \
            stops taking requests, lets the workers finish their items (--drain-timeout), and \
            exits 0; items not finished by then go back to the queue for another server.

            Every flag falls back to an environment variable (docs/operations.md). Exit codes: 0 \
            stopped; 2 bad flag, or a database connection that lacks what it needs (a pooler in transaction \
            mode, docs/operations.md); 4 database unreachable at start; 5 the database has a schema this \
            binary does not know.
            """
    )

    @Option(help: "The address to listen on; RETRACT_HOST, else 127.0.0.1.")
    var host: String?

    @Option(help: "The port; RETRACT_PORT, else 8080 (0 picks a free one).")
    var port: Int?

    @Option(help: "all, api (HTTP only) or workers (fan-out only); RETRACT_MODE, else all.")
    var mode: String?

    @Option(help: "The largest request body in bytes; RETRACT_MAX_BODY_SIZE, else 1048576.")
    var maxBodySize: Int?

    @Option(help: ArgumentHelp("Seconds SIGTERM waits for in-flight work; RETRACT_DRAIN_TIMEOUT, else 25.", valueName: "SECONDS"))
    var drainTimeout: Int?

    @Option(help: "PostgreSQL connections, one of them listening for new work; RETRACT_POOL_SIZE, else 20 (at least 3).")
    var poolSize: Int?

    @Option(
        help:
            "PostgreSQL connections of their own for the reads a read key can start (lists, the audit log, console pages), so they cannot take the pool's; RETRACT_READ_POOL_SIZE, else 4."
    )
    var readPoolSize: Int?

    @Option(
        help:
            "PostgreSQL connections of their own for the device feed, which every phone reads with a public key, so that it cannot take the pool's however many read; RETRACT_FEED_POOL_SIZE, else 4."
    )
    var feedPoolSize: Int?

    @Option(
        help: ArgumentHelp(
            "Seconds one of those reads, or of the feed's, may run before PostgreSQL stops it (503 read-timeout); RETRACT_READ_TIMEOUT, else 10.",
            valueName: "SECONDS"))
    var readTimeout: Int?

    @Option(help: "Reads one API key may make a second, twice that at once; RETRACT_KEY_READ_RATE, else 50 (0: no limit).")
    var keyReadRate: Int?

    @Option(help: "Writes one API key may make a second, twice that at once; RETRACT_KEY_WRITE_RATE, else 1000 (0: no limit).")
    var keyWriteRate: Int?

    @Option(
        help: ArgumentHelp(
            "Device feed calls this process answers a second while its workers send a retraction, waiting their turn (503 feed-paced past a second); RETRACT_FEED_RATE_WHILE_SENDING, else 100 per core (0: no limit).",
            valueName: "CALLS"))
    var feedRateWhileSending: Int?

    @Option(help: "text or json; RETRACT_LOG_FORMAT, else text.")
    var logFormat: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical; RETRACT_LOG_LEVEL, else info.")
    var logLevel: String?

    @Option(help: "Days of deliveries kept; RETRACT_RETENTION_DAYS, else 30.")
    var retentionDays: Int?

    @Option(help: ArgumentHelp("Seconds a claimed work item stays this server's without news (default 60).", valueName: "SECONDS"))
    var lease: Int?

    @Option(
        name: .customLong("allowed-endpoint"),
        help: ArgumentHelp(
            "A host (HOST or HOST:PORT) an app registered over the API may name as its endpoint; repeatable, and replaces the default, Apple's and Google's push hosts. RETRACT_ALLOWED_ENDPOINTS (comma-separated) when not given.",
            valueName: "HOST[:PORT]"))
    var allowedEndpoints: [String] = []

    @Option(
        name: .customLong("allowed-webhook-host"),
        help: ArgumentHelp(
            "A host (HOST for port 443, or HOST:PORT) an app's completion webhook may be sent to; repeatable, checked again before every delivery. None by default, so no webhook can be set. RETRACT_ALLOWED_WEBHOOK_HOSTS (comma-separated) when not given.",
            valueName: "HOST[:PORT]"))
    var allowedWebhookHosts: [String] = []

    @Option(
        name: .customLong("allowed-webhook-network"),
        help: ArgumentHelp(
            "An address range (CIDR) a webhook's host may resolve to although it is loopback, private, link-local or unique-local; repeatable. None by default: such addresses are refused unless the host is that address itself. RETRACT_ALLOWED_WEBHOOK_NETWORKS (comma-separated) when not given.",
            valueName: "CIDR"))
    var allowedWebhookNetworks: [String] = []

    @Flag(
        name: .customLong("console-plain-http"),
        help:
            "Console cookies without Secure and the __Host- prefix, for a console reached over plain HTTP from another host in development; RETRACT_CONSOLE_PLAIN_HTTP=true. Not for production: put the console behind TLS."
    )
    var consolePlainHTTP = false

    @Option(
        name: .customLong("credentials-dir"),
        help: ArgumentHelp(
            "The folder credential files named over the API (POST /v1/apps) must be in; RETRACT_CREDENTIALS_DIR. Without it, the API takes no credential files.",
            valueName: "DIR"))
    var credentialsDirectory: String?

    @Option(
        name: .customLong("read-database-url"),
        help: ArgumentHelp(
            "A streaming replica of the ledger (a hot standby) for the reads that may lag it: the device feed, GET /v1/retractions/{id}, the notification and audit lists. Writes, the workers and everything else stay on --database-url. RETRACT_READ_DATABASE_URL when not given.",
            valueName: "postgres://USER@HOST:PORT/DB"))
    var readDatabaseURL: String?

    @OptionGroup var engine: EngineOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        lineBufferStandardOutput()
        let environment = ProcessInfo.processInfo.environment
        do {
            let settings = try serverSettings(environment)
            let logger = try bootstrapLogging(environment)
            let retention = Retention(
                days: try Self.number(retentionDays, "RETRACT_RETENTION_DAYS", "--retention-days", environment, 30, 1...3650))
            let pool = try Self.number(poolSize, "RETRACT_POOL_SIZE", "--pool-size", environment, 20, 3...500)
            let readTimeout = Duration.seconds(
                try Self.number(readTimeout, "RETRACT_READ_TIMEOUT", "--read-timeout", environment, 10, 1...3600))
            let readPool = RetractStore.ReadPool(
                connections: try Self.number(readPoolSize, "RETRACT_READ_POOL_SIZE", "--read-pool-size", environment, 4, 1...100),
                statementTimeout: readTimeout)
            let feedPool = RetractStore.ReadPool(
                connections: try Self.number(feedPoolSize, "RETRACT_FEED_POOL_SIZE", "--feed-pool-size", environment, 4, 1...100),
                statementTimeout: readTimeout)
            let engineSettings = try engine.settings(lease: lease)
            let apnsSettings = try engine.apnsSettings()
            let fcmSettings = try engine.fcmSettings()
            let registry = PrometheusCollectorRegistry()
            let factory = RetractServer.metricsFactory(registry: registry)
            // The APNs clients count through the global factory; this process has one registry.
            MetricsSystem.bootstrap(factory)
            let readURL = try Self.readURL(readDatabaseURL ?? environment["RETRACT_READ_DATABASE_URL"])
            try await RetractStore.withStore(
                url: try database.url(), readURL: readURL, retention: retention, maximumConnections: pool, readPool: readPool,
                feedPool: feedPool, logger: logger
            ) { store in
                // What a connection pooler could take away, refused now rather than missed later.
                try await RetractStore.checkSessionFeatures(
                    url: try database.url(), readURL: readURL, readTimeout: readTimeout, logger: logger)
                if let readURL { logger.notice("reads that may lag go to the read database", metadata: ["database": "\(readURL)"]) }
                for migration in try await MigrationRunner().migrate(store) {
                    logger.notice("applied migration", metadata: ["migration": "\(migration.name)"])
                }
                let transports = PushTransports(settings: apnsSettings, fcm: fcmSettings, logger: logger)
                let engine = RetractEngine(
                    store: store, transports: transports, settings: engineSettings, logger: logger, metricsFactory: factory)
                let server = RetractServer(engine: engine, settings: settings, registry: registry, logger: logger) { port in
                    // Scripts and tests read the port from this line.
                    print("retract serve: listening on http://\(settings.host):\(port) (\(settings.mode.rawValue))")
                }
                do {
                    try await server.run(gracefulShutdownSignals: [.sigterm, .sigint])
                } catch {
                    await transports.shutdown()
                    throw error
                }
                await transports.shutdown()
            }
        } catch {
            throw fail("serve", error)
        }
    }

    /// The read replica's URL, if one was given; a malformed one is refused naming the flag.
    private static func readURL(_ text: String?) throws(StoreError) -> DatabaseURL? {
        guard let text, !text.isEmpty else { return nil }
        do {
            return try DatabaseURL(text)
        } catch {
            throw StoreError(.invalidInput, "--read-database-url (RETRACT_READ_DATABASE_URL): \(error.message)")
        }
    }

    private func serverSettings(_ environment: [String: String]) throws(RetractError) -> ServerSettings {
        var settings = ServerSettings()
        settings.host = host ?? environment["RETRACT_HOST"] ?? settings.host
        settings.port = try Self.number(port, "RETRACT_PORT", "--port", environment, settings.port, 0...65535)
        let modeText = mode ?? environment["RETRACT_MODE"] ?? ServeMode.all.rawValue
        guard let mode = ServeMode(rawValue: modeText) else { throw RetractError(.invalidInput, "--mode \(modeText): all, api or workers") }
        settings.mode = mode
        settings.maxBodySize = try Self.number(
            maxBodySize, "RETRACT_MAX_BODY_SIZE", "--max-body-size", environment, settings.maxBodySize, 1024...(64 << 20))
        settings.drainTimeout = .seconds(
            try Self.number(drainTimeout, "RETRACT_DRAIN_TIMEOUT", "--drain-timeout", environment, 25, 0...3600))
        settings.allowedEndpoints = Self.hosts(allowedEndpoints, "RETRACT_ALLOWED_ENDPOINTS", environment) ?? settings.allowedEndpoints
        settings.webhooks.destinations.allowedHosts = Self.hosts(allowedWebhookHosts, "RETRACT_ALLOWED_WEBHOOK_HOSTS", environment) ?? []
        for text in Self.hosts(allowedWebhookNetworks, "RETRACT_ALLOWED_WEBHOOK_NETWORKS", environment) ?? [] {
            guard let network = IPNetwork(text) else {
                throw RetractError(
                    .invalidInput, "--allowed-webhook-network \(text.prefix(100)): an address range such as 10.0.0.0/8 or fd00::/8")
            }
            settings.webhooks.destinations.allowedNetworks.append(network)
        }
        settings.consolePlainHTTP = try Self.flag(consolePlainHTTP, "RETRACT_CONSOLE_PLAIN_HTTP", environment)
        settings.rateLimits.readsPerSecond = try Self.number(
            keyReadRate, "RETRACT_KEY_READ_RATE", "--key-read-rate", environment, settings.rateLimits.readsPerSecond, 0...1_000_000)
        settings.rateLimits.writesPerSecond = try Self.number(
            keyWriteRate, "RETRACT_KEY_WRITE_RATE", "--key-write-rate", environment, settings.rateLimits.writesPerSecond, 0...1_000_000)
        settings.rateLimits.feedCallsWhileSending = try Self.number(
            feedRateWhileSending, "RETRACT_FEED_RATE_WHILE_SENDING", "--feed-rate-while-sending", environment,
            settings.rateLimits.feedCallsWhileSending, 0...1_000_000)
        settings.credentialsDirectory = credentialsDirectory ?? environment["RETRACT_CREDENTIALS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        if let problem = settings.problem { throw RetractError(.invalidInput, problem) }
        return settings
    }

    /// Hosts from a repeated flag, else from its comma-separated environment variable; nil when neither is given.
    private static func hosts(_ flags: [String], _ variable: String, _ environment: [String: String]) -> [String]? {
        if !flags.isEmpty { return flags }
        guard let list = environment[variable], !list.isEmpty else { return nil }
        return list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// A flag given, else its environment variable: `true`/`1` or `false`/`0`.
    private static func flag(_ given: Bool, _ variable: String, _ environment: [String: String]) throws(RetractError) -> Bool {
        if given { return true }
        switch environment[variable]?.lowercased() {
        case nil, "", "false", "0": return false
        case "true", "1": return true
        case let other?: throw RetractError(.invalidInput, "\(variable)=\(other.prefix(40)): true or false")
        }
    }

    /// A number from its flag, else its environment variable, else `fallback`, within `range`.
    private static func number(
        _ flag: Int?, _ variable: String, _ name: String, _ environment: [String: String], _ fallback: Int, _ range: ClosedRange<Int>
    ) throws(RetractError) -> Int {
        let value: Int
        if let flag {
            value = flag
        } else if let text = environment[variable], !text.isEmpty {
            guard let parsed = Int(text) else { throw RetractError(.invalidInput, "\(variable)=\(text.prefix(40)): not a number") }
            value = parsed
        } else {
            return fallback
        }
        guard range.contains(value) else {
            throw RetractError(.invalidInput, "\(flag == nil ? variable : name) \(value): \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// Sets up swift-log for the process (once) and returns the server's logger.
    private func bootstrapLogging(_ environment: [String: String]) throws(RetractError) -> Logger {
        let levelText = logLevel ?? environment["RETRACT_LOG_LEVEL"] ?? (engine.verbose ? "debug" : "info")
        guard let level = Logger.Level(rawValue: levelText) else {
            throw RetractError(.invalidInput, "--log-level \(levelText): trace, debug, info, notice, warning, error or critical")
        }
        let format = logFormat ?? environment["RETRACT_LOG_FORMAT"] ?? "text"
        switch format {
        case "text": LoggingSystem.bootstrap(StreamLogHandler.standardError)
        case "json": LoggingSystem.bootstrap(JSONLogHandler.init)
        default: throw RetractError(.invalidInput, "--log-format \(format): text or json")
        }
        var logger = Logger(label: "retract")
        logger.logLevel = level
        return logger
    }
}
