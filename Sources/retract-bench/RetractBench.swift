import ArgumentParser

/// The benchmark programs behind `scripts/bench`. Figures come from release
/// builds; see docs/performance.md.
@main
struct RetractBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retract-bench",
        abstract: "Benchmarks for Retract (run through scripts/bench).",
        subcommands: [
            APNsBenchmark.self, BenchmarkCertificates.self, LedgerBenchmark.self, LedgerStreamBenchmark.self, RetractBenchmark.self,
            FCMBenchmark.self, FCMClientBenchmark.self, FCMSimulatorProcess.self, LatencyBenchmark.self, CancelBenchmark.self,
            EditBenchmark.self, ReadsBenchmark.self,
        ]
    )
}
