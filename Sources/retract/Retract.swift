import ArgumentParser

@main
struct Retract: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retract",
        abstract: "Take back push notifications that were already delivered.",
        subcommands: [MigrateCommand.self, Match.self, SimulatorCommand.self]
    )
}
