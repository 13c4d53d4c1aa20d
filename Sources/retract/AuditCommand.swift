import ArgumentParser
import Foundation
import RetractCore
import RetractModel
import RetractServer
import RetractStore

/// `retract audit`: the audit log, read from the ledger directly.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Print the audit log: who registered apps, made retractions, created and revoked keys.",
        discussion: """
            Newest first: time, who (the API key's name, or the actor), action, app, subject and reason. \
            Reads the ledger directly, every app unless --app names one.

            Exit codes: 0 printed; 2 bad option; 4 database unreachable; 6 unknown app.
            """
    )

    @Option(help: "Only this app's entries (entries of no app, such as keys, are left out).")
    var app: String?

    @Option(help: "Only entries since this time: RFC 3339 (2026-11-24T09:00:00Z) or an age such as 30m, 24h or 7d.")
    var since: String?

    @Option(help: "Only this action: app.registered, retraction.created, retraction.cancelled, key.created, key.revoked.")
    var action: String?

    @Option(help: "How many entries at most.")
    var limit = 50

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    /// The most entries one run prints.
    static let maximumLimit = 10_000

    func run() async throws {
        do {
            guard (1...Self.maximumLimit).contains(limit) else {
                throw RetractError(.invalidInput, "--limit: \(limit); 1 to \(Self.maximumLimit)")
            }
            var query = AuditQuery(action: action, limit: min(limit, AuditQuery.maximumLimit))
            if let since {
                guard let date = Self.time(since, now: Date()) else {
                    throw RetractError(.invalidInput, "--since: \"\(since)\" is neither an RFC 3339 time nor an age such as 30m, 24h or 7d")
                }
                query.since = date
            }
            let entries = try await database.withStore { store in
                if let app {
                    guard let found = try await store.app(named: app) else { throw RetractError(.unknownApp, "no app named \"\(app)\"") }
                    query.appIDs = [found.id]
                }
                var entries: [AuditEntry] = []
                while entries.count < limit {
                    query.limit = min(limit - entries.count, AuditQuery.maximumLimit)
                    let page = try await store.auditPage(query)
                    entries += page.entries
                    guard let next = page.next else { break }
                    query.cursor = next
                }
                return entries
            }
            if json {
                try printJSON(entries.map(AuditEntryView.init))
            } else if entries.isEmpty {
                print("no audit entries")
            } else {
                print(Self.table(entries), terminator: "")
            }
        } catch {
            throw fail("audit", error)
        }
    }

    /// An RFC 3339 time, or an age before `now`: a number and `m`, `h` or `d`.
    static func time(_ text: String, now: Date) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        guard let unit = text.last, let count = Int(text.dropLast()), count >= 0 else { return nil }
        let seconds: Double
        switch unit {
        case "m": seconds = 60
        case "h": seconds = 3600
        case "d": seconds = 86400
        default: return nil
        }
        return now.addingTimeInterval(-Double(count) * seconds)
    }

    /// Aligned columns with a header; a line per entry.
    static func table(_ entries: [AuditEntry]) -> String {
        let rows =
            [["AT", "WHO", "ACTION", "APP", "SUBJECT", "REASON"]]
            + entries.map { entry in
                [
                    entry.at.map { $0.formatted(.iso8601) } ?? "", entry.keyName.map { "key \($0)" } ?? entry.actor, entry.action,
                    entry.appName ?? "-", entry.subject ?? "-",
                    (entry.reason ?? "").replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " "),
                ]
            }
        var widths = [Int](repeating: 0, count: 6)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            .joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }
        .joined()
    }
}
