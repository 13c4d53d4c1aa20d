import ArgumentParser
import Foundation
import Logging
import RetractCore
import RetractKit
import RetractModel
import RetractStore

/// `retract-bench ledger`: records N deliveries of one reference through
/// RetractStore in batches, then loads the same rows into the same emptied
/// table with `psql \copy`, and prints both rates as JSON. Leaves the rows in
/// place for `ledger-stream`.
struct LedgerBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Bulk recording through RetractStore next to psql \\copy into the same table."
    )

    @Option(help: "The benchmark's database (migrated here).")
    var databaseURL: String

    @Option(name: .customShort("n"), help: "Deliveries to record.")
    var count = 1_000_000

    @Option(help: "Deliveries per RetractStore call.")
    var batch = 10_000

    @Option(help: "A scratch folder for the CSV file psql loads.")
    var work: String

    @Option(
        name: .customLong("label"),
        help: ArgumentHelp(
            """
            Give every delivery this label (repeatable): thread (one of 1,000), sender (one of 5,000), recipient (its own) \
            or campaign (one); psql loads the same columns.
            """, valueName: "KIND"))
    var labelNames: [String] = []

    func run() async throws {
        let url = try DatabaseURL(databaseURL)
        let sentAt = Date()
        let kinds = try labelNames.map { name in
            guard let kind = RetractionSelector.Kind(rawValue: name) else {
                throw CommandFailure("--label \(name): one of \(RetractionSelector.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return kind
        }
        try await RetractStore.withStore(url: url, maximumConnections: 2, logger: benchmarkLogger) { store in
            try await MigrationRunner().migrate(store)
            var app = try await store.app(named: "bench")
            if app == nil {
                app = try await store.registerApp(
                    AppRegistration(
                        name: "bench", topic: "com.example.bench", environment: .sandbox,
                        authentication: .token(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", keyPath: "/dev/null")),
                    actor: "bench")
            }
            guard let app else { return }
            _ = try await store.client.query("TRUNCATE deliveries", logger: benchmarkLogger).collect()

            // The rows, made before the clock starts: the store's cost, not the generator's.
            let batches = stride(from: 0, to: count, by: batch).map { start in
                (start..<min(start + batch, count)).map {
                    Delivery(
                        appID: app.id, reference: Self.reference, token: Self.token($0), sentAt: sentAt,
                        labels: Self.labels($0, kinds))
                }
            }
            let started = ContinuousClock.now
            var recorded = 0
            for rows in batches { recorded += try await store.record(rows) }
            let storeSeconds = (ContinuousClock.now - started).inSeconds
            guard recorded == count else { throw CommandFailure("recorded \(recorded) of \(count) deliveries") }

            let csv = URL(fileURLWithPath: work).appendingPathComponent("deliveries.csv")
            try Self.writeCSV(batches, to: csv)
            _ = try await store.client.query("TRUNCATE deliveries", logger: benchmarkLogger).collect()
            let copySeconds = try Self.timePSQLCopy(csv, url: url, labels: kinds)
            print(
                #"{"rows": \#(count), "batch": \#(batch), "storeSeconds": \#(storeSeconds), "storeRowsPerSecond": \#(Double(count) / storeSeconds), "copySeconds": \#(copySeconds), "copyRowsPerSecond": \#(Double(count) / copySeconds)}"#
            )
        }
    }

    static let reference: ReferenceID = "bench-broadcast"

    /// The labels of the `index`th delivery, of these kinds.
    static func labels(_ index: Int, _ kinds: [RetractionSelector.Kind]) -> DeliveryLabels {
        var labels = DeliveryLabels()
        for kind in kinds {
            labels[kind] =
                switch kind {
                case .thread: "thread-\(index % 1000)"
                case .sender: "user-\(index % 5000)"
                case .recipient: "user-\(index)"
                case .campaign: "bench-campaign"
                }
        }
        return labels
    }

    /// 32-byte tokens, as APNs issues them, distinct per index.
    static func token(_ index: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0xA5, count: 32)
        withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        return DeviceToken(bytes: bytes)
    }

    private static func writeCSV(_ batches: [[Delivery]], to file: URL) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var text = ""
        text.reserveCapacity(batches.count * (batches.first?.count ?? 0) * 120)
        for delivery in batches.joined() {
            let day = String(formatter.string(from: delivery.sentAt).prefix(10))
            text += "\(delivery.appID),\(delivery.reference),\\x\(delivery.token.hex),\(day),\(formatter.string(from: delivery.sentAt))"
            for (_, value) in delivery.labels.given { text += ",\(value)" }
            text += "\n"
        }
        try Data(text.utf8).write(to: file)
    }

    private static func timePSQLCopy(_ csv: URL, url: DatabaseURL, labels: [RetractionSelector.Kind]) throws -> Double {
        // The label columns in the order `given` writes them.
        let given = RetractionSelector.Kind.allCases.filter(labels.contains)
        let columns = (["app_id", "reference", "token", "sent_on", "sent_at"] + given.map(\.column)).joined(separator: ", ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
            "-h", url.host, "-p", "\(url.port)", "-U", url.username, "-d", url.database,
            "-c", "\\copy deliveries (\(columns)) FROM '\(csv.path)' WITH (FORMAT csv)",
        ]
        if let password = url.password {
            process.environment = ProcessInfo.processInfo.environment.merging(["PGPASSWORD": password]) { $1 }
        }
        let started = ContinuousClock.now
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CommandFailure("psql \\copy exited with \(process.terminationStatus)") }
        return (ContinuousClock.now - started).inSeconds
    }
}

/// `retract-bench ledger-stream`: streams every device of the reference
/// `ledger` recorded, and prints rows/s and this process's peak RSS.
struct LedgerStreamBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger-stream",
        abstract: "Stream all devices of the benchmark's reference; print rows/s and peak RSS."
    )

    @Option(help: "The benchmark's database, filled by `ledger`.")
    var databaseURL: String

    @Option(help: "Devices per page.")
    var pageSize = 1000

    func run() async throws {
        let url = try DatabaseURL(databaseURL)
        try await RetractStore.withStore(url: url, maximumConnections: 1, logger: benchmarkLogger) { store in
            guard let app = try await store.app(named: "bench") else { throw CommandFailure("run `retract-bench ledger` first") }
            let started = ContinuousClock.now
            var devices = 0
            for try await page in store.devices(appID: app.id, references: [LedgerBenchmark.reference], pageSize: pageSize) {
                devices += page.devices.count
            }
            let seconds = (ContinuousClock.now - started).inSeconds
            print(
                #"{"devices": \#(devices), "pageSize": \#(pageSize), "seconds": \#(seconds), "devicesPerSecond": \#(Double(devices) / seconds), "peakRSSMiB": \#(peakResidentMiB())}"#
            )
        }
    }
}

let benchmarkLogger: Logger = {
    var logger = Logger(label: "retract.bench")
    logger.logLevel = .warning
    return logger
}()

/// This process's peak resident set (VmHWM), in MiB.
func peakResidentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return -1 }
    return kilobytes / 1024
}
