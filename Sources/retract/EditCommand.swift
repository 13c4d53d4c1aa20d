import ArgumentParser
import Foundation
import RetractCore
import RetractDevSupport
import RetractKit
import RetractModel

/// `retract edit`: a new text for a notification already delivered.
struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Show a new text in place of a notification on every device that received it.",
        discussion: """
            Finds every device REFERENCE was recorded for and sends each one the new title and \
            body, in the app's delivery mode unless --mode says otherwise: background (a silent \
            push; RetractKit shows the new text in place of the notification, where it still \
            shows), service-extension (an alert the app's Notification Service Extension shows \
            in the original's place, or hides where the original is gone) or replace (an alert \
            in the original's place, by its collapse id, with no app code; it also shows where \
            the user had dismissed the original). A device recorded for REFERENCE later is sent \
            the newest edit. A retracted reference cannot be edited. Progress and the final \
            account are shown as for `retract notification`.

            Exit codes: as `retract notification`'s; 10 the reference was retracted.
            """
    )

    @Argument(help: "The reference id of the notification to edit.")
    var reference: String

    @Option(help: "The app's name.")
    var app: String

    @Option(help: ArgumentHelp("The new title; the one shown is kept where the device can when not given.", valueName: "TEXT"))
    var title: String?

    @Option(help: ArgumentHelp("The new body.", valueName: "TEXT"))
    var body: String

    @Option(help: "Why, for the audit log.")
    var reason: String?

    @Flag(help: "Count the devices; send nothing.")
    var dryRun = false

    @Option(help: ArgumentHelp("How the pushes reach phones; the app's default when not given.", valueName: "MODE"))
    var mode: RetractionMode?

    @Flag(help: "Print the final account as JSON.")
    var json = false

    @Flag(help: "Queue the edit and print its id without waiting; workers (retract serve) send it.")
    var noWait = false

    @Option(help: "Makes a repeated command resume the first edit instead of starting another.")
    var idempotencyKey: String?

    @OptionGroup var scope: AccountOption
    @OptionGroup var engine: EngineOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        lineBufferStandardOutput()
        let account: RetractionView
        do {
            let reference = try ReferenceID(argument: reference, name: "reference \"\(reference.prefix(80))\"")
            account = try await engine.withEngine(database, lease: nil) { engine in
                let app = try await engine.app(named: app)
                if !dryRun { try engine.checkCredentials(of: app) }
                let (edit, _) = try await engine.startRetraction(
                    app: app, target: .references([reference]), requestedBy: AppsCommand.Add.actor, reason: reason, dryRun: dryRun,
                    idempotencyKey: idempotencyKey, requireRecorded: true, mode: mode,
                    edit: NotificationEdit(title: title, body: body), account: scope.account)
                return try await NotificationCommand.account(of: edit, app: app, engine: engine, following: !noWait)
            }
        } catch {
            let flags = ["mode": "--mode", "title": "--title", "body": "--body", "reference": "REFERENCE", "account": "--account"]
            throw fail("edit", (error as? RetractError)?.naming(flags) ?? error)
        }
        try NotificationCommand.show(account, json: json)
    }
}
