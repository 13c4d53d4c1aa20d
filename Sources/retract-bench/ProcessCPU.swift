import Foundation

/// CPU seconds (user and system) used so far by the processes on this
/// machine, grouped by what they are, read from `/proc`: to tell which of
/// the benchmark's processes a slower run spent its time in, when they
/// share the same cores. Every process by those names counts, so run the
/// bench with nothing else of the kind on the machine.
struct ProcessCPU: Sendable {
    /// Seconds by group: `bench` (this process), `simulator` (the `retract`
    /// processes) and `postgres` (every PostgreSQL process).
    var seconds: [String: Double]

    static func now() -> ProcessCPU {
        let ownPID = ProcessInfo.processInfo.processIdentifier
        var seconds: [String: Double] = ["bench": 0, "simulator": 0, "postgres": 0]
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let name = String(stat[stat.index(after: open)..<close])
            let group: String
            if pid == ownPID {
                group = "bench"
            } else if name == "retract" {
                group = "simulator"
            } else if name == "postgres" {
                group = "postgres"
            } else {
                continue
            }
            // After the name: state is field 3; utime and stime are fields 14 and 15, and cutime and
            // cstime (16 and 17) those of its children it reaped: a PostgreSQL backend or autovacuum
            // worker that ended between two readings counts in the postmaster's.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 14 else { continue }
            let ticks = fields[11...14].compactMap { Double($0) }.reduce(0, +)
            seconds[group, default: 0] += ticks / ticksPerSecond
        }
        return ProcessCPU(seconds: seconds)
    }

    /// What each group used since `earlier`, as JSON: `{"bench": 1.2, …}`.
    func json(since earlier: ProcessCPU) -> String {
        let parts = seconds.keys.sorted().map { group in
            let used = (seconds[group] ?? 0) - (earlier.seconds[group] ?? 0)
            return #""\#(group)": \#((used * 100).rounded() / 100)"#
        }
        return "{" + parts.joined(separator: ", ") + "}"
    }
}
