import ArgumentParser

@main
struct Retract: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retract",
        abstract: "Take back push notifications that were already delivered.",
        subcommands: [
            MigrateCommand.self, AppsCommand.self, RecordCommand.self, SendCommand.self, NotificationCommand.self, EditCommand.self,
            StatusCommand.self,
            CancelCommand.self,
            ApproveCommand.self, RejectCommand.self,
            ReadsCommand.self, ServeCommand.self, KeysCommand.self, AuditCommand.self, DemoCommand.self, SimulatorCommand.self, Match.self,
        ]
    )
}
