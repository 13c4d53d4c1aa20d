import ArgumentParser
import Foundation
import RetractDevSupport

/// `retract-chaos`: runs the `retract` binary through the faults a
/// deployment meets, and prints, per scenario, what the phones show after.
@main
struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retract-chaos",
        abstract: "Run Retract's fault scenarios end to end and print what the devices show after each.",
        discussion: """
            Each scenario starts the APNs simulator (and FCM's) in this process, a database of its own \
            on a throwaway PostgreSQL, and `retract serve --mode workers` processes; sends a \
            notification with `retract send`; retracts it with `retract notification --no-wait`; \
            injects its fault; and, when the retraction is finished, applies RetractKit to every \
            device's inbox. One line per scenario: devices, devices reached, duplicate removal pushes, \
            devices failed, devices still showing the notification, seconds, pass or fail.

            Exit codes: 0 every scenario passed; 1 one failed; 2 bad arguments.
            """
    )

    @Option(help: ArgumentHelp("The retract binary to run (a release build).", valueName: "PATH"))
    var retract: String

    @Flag(help: "Small fleets and a 10-second outage: the form CI runs.")
    var short = false

    @Option(name: .customLong("scenario"), help: "Run only this scenario; repeatable. --list names them.")
    var scenarios: [String] = []

    @Option(help: ArgumentHelp("How long APNs stays unreachable in apns-outage (300, or 10 with --short).", valueName: "SECONDS"))
    var outage: Int?

    @Flag(help: "Keep the scratch folder with every worker's log, and say where it is.")
    var keepLogs = false

    @Option(help: ArgumentHelp("The log level of the worker processes (default notice).", valueName: "LEVEL"))
    var workerLogLevel = "notice"

    @Flag(help: "List the scenarios and exit.")
    var list = false

    func validate() throws {
        let known = Set(Scenario.all.map(\.name))
        for name in scenarios where !known.contains(name) {
            throw ValidationError("--scenario \(name): one of \(known.sorted().joined(separator: ", "))")
        }
        if let outage, !(1...3600).contains(outage) { throw ValidationError("--outage \(outage): 1 to 3600 seconds") }
    }

    func run() async throws {
        if list {
            for scenario in Scenario.all {
                let form = scenario.inShortForm ? "" : " (not in --short)"
                print("\(scenario.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \(scenario.summary)\(form)")
            }
            return
        }
        lineBufferStandardOutput()
        var size = short ? Size.short : Size.full
        if let outage { size.outageLength = .seconds(outage) }
        let chosen = Scenario.all.filter { scenarios.isEmpty ? !short || $0.inShortForm : scenarios.contains($0.name) }
        let stage = try ChaosStage.start(retract: retract, workerLogLevel: workerLogLevel)
        defer {
            stage.stop(keepingLogs: keepLogs)
            if keepLogs { print("logs: \(stage.folder.path)") }
        }
        print(Self.header)
        var outcomes: [Outcome] = []
        for scenario in chosen {
            var outcome: Outcome
            do {
                outcome = try await scenario.run(stage, size)
            } catch {
                outcome = Outcome(scenario: scenario.name, problems: ["\(error)"])
            }
            print(Self.line(outcome))
            for note in outcome.notes { print("    \(note)") }
            for problem in outcome.problems { print("    FAIL: \(problem)") }
            outcomes.append(outcome)
        }
        let failed = outcomes.filter { !$0.passed }
        print("\(outcomes.count - failed.count) of \(outcomes.count) scenarios passed\(short ? " (short form)" : "")")
        if !failed.isEmpty { throw ExitCode(1) }
    }

    static let header =
        "scenario               devices   reached  duplicates  failed  still showing   seconds  result"

    static func line(_ outcome: Outcome) -> String {
        func column(_ value: Int, _ width: Int) -> String { String(repeating: " ", count: max(width - "\(value)".count, 0)) + "\(value)" }
        return outcome.scenario.padding(toLength: 20, withPad: " ", startingAt: 0)
            + column(outcome.devices, 9) + column(outcome.reached, 10) + column(outcome.duplicates, 12) + column(outcome.failed, 8)
            + column(outcome.showing, 15) + String(format: "%10.1f", outcome.seconds) + "  " + (outcome.passed ? "pass" : "FAIL")
    }
}
