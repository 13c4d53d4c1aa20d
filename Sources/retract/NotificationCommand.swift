import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import RetractCore
import RetractDevSupport
import RetractKit
import RetractModel
import RetractStore

/// `retract notification`: the retract command.
struct NotificationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notification",
        abstract: "Take back a notification from every device that received it.",
        discussion: """
            Finds every device the references were recorded for and sends each one a push \
            carrying all of its references, in the app's delivery mode unless --mode says \
            otherwise: background (a silent push the app handles), service-extension (an alert \
            the app's Notification Service Extension turns into a removal, even after a \
            force-quit) or replace (an alert in the original's place, by its collapse id, with no \
            app code). Then it waits until every device is \
            reached, found dead, or given up on, showing progress on stderr; the final account \
            goes to stdout. Interrupted, the retraction stays queued: `retract notification` with \
            the same --idempotency-key, or any worker, finishes it.

            Exit codes: 0 every device was reached or is dead; 2 bad argument; 3 some devices \
            failed; 4 database unreachable; 6 unknown app; 7 no delivery of the references was \
            recorded; 8 the app's APNs key or FCM service account is missing or unusable; 9 APNs \
            or FCM refused the app's credentials and the retraction stopped.
            """
    )

    @Argument(help: "The reference ids of the notifications to take back (none with a selector).")
    var references: [String] = []

    @Option(help: ArgumentHelp("Instead of references: every message of this conversation.", valueName: "ID"))
    var thread: String?

    @Option(help: ArgumentHelp("Instead of references: every message this user wrote.", valueName: "ID"))
    var sender: String?

    @Option(help: ArgumentHelp("Instead of references: every notification sent to this user's devices.", valueName: "ID"))
    var recipient: String?

    @Option(help: ArgumentHelp("Instead of references: every notification of this campaign.", valueName: "LABEL"))
    var campaign: String?

    @Option(help: ArgumentHelp("With a selector: only what was sent at or after this time (ISO 8601).", valueName: "TIME"))
    var since: String?

    @Option(help: ArgumentHelp("With a selector: only what was sent before this time (ISO 8601); now when not given.", valueName: "TIME"))
    var until: String?

    @Option(help: "The app's name.")
    var app: String

    @Option(help: "Why, for the audit log.")
    var reason: String?

    @Flag(help: "Count the devices; send nothing.")
    var dryRun = false

    @Option(help: ArgumentHelp("How the pushes reach phones; the app's default when not given.", valueName: "MODE"))
    var mode: RetractionMode?

    @Option(help: ArgumentHelp("The app icon's badge the pushes set (service-extension and replace only).", valueName: "N"))
    var badge: Int?

    @Option(
        help: ArgumentHelp(
            "What this retraction's alerts show instead of the app's retraction text (service-extension and replace only).",
            valueName: "TEXT"))
    var text: String?

    @Flag(help: "Print the final account as JSON.")
    var json = false

    @Flag(help: "Queue the retraction and print its id without waiting; workers (retract serve) send it.")
    var noWait = false

    @Option(help: "Makes a repeated command resume the first retraction instead of starting another.")
    var idempotencyKey: String?

    @Option(
        help: ArgumentHelp(
            "Seconds a claimed work item stays this process's without news; another process takes it over after that (default 60).",
            valueName: "SECONDS"))
    var lease: Int?

    @OptionGroup var scope: AccountOption
    @OptionGroup var engine: EngineOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        // Lines in order with the progress on stderr, even into a pipe.
        lineBufferStandardOutput()
        let account: RetractionView
        do {
            let selector = try selector()
            let references = try references.map { (text) throws(RetractError) in
                try ReferenceID(argument: text, name: "reference \"\(text.prefix(80))\"")
            }
            let target: RetractionTarget
            do {
                target = try RetractionTarget(references: references, selector: selector)
            } catch {
                throw RetractError(error)
            }
            account = try await engine.withEngine(database, lease: lease) { engine in
                let app = try await engine.app(named: app)
                // A key that cannot be read stops the command before anything is written.
                if !dryRun { try engine.checkCredentials(of: app) }
                let (retraction, unknown) = try await engine.startRetraction(
                    app: app, target: target, requestedBy: AppsCommand.Add.actor, reason: reason,
                    dryRun: dryRun, idempotencyKey: idempotencyKey, requireRecorded: true, mode: mode, badge: badge, text: text,
                    account: scope.account)
                if !unknown.isEmpty {
                    printError(
                        "retract notification: warning: no delivery of \(unknown.map(\.rawValue).joined(separator: ", ")) was recorded; retracting the others"
                    )
                }
                if let selector, retraction.counts.total == 0 {
                    printError(
                        "retract notification: warning: no delivery of \(selector.description) was recorded yet; "
                            + "any recorded later within its range will be retracted as it comes")
                }
                return try await Self.account(of: retraction, app: app, engine: engine, following: !noWait)
            }
        } catch {
            let flags = [
                "mode": "--mode", "badge": "--badge", "text": "--text", "sentAfter": "--since", "sentBefore": "--until",
                "account": "--account",
            ]
            .merging(LabelOptions.flags) { given, _ in given }
            throw fail("notification", (error as? RetractError)?.naming(flags) ?? error)
        }
        try Self.show(account, json: json)
    }

    /// The account of `retraction` once this process finished it, showing
    /// progress, when `following` and it is under way; at once otherwise (it
    /// ended when made, or awaits approval, or the workers send it).
    static func account(of retraction: Retraction, app: App, engine: RetractEngine, following: Bool) async throws -> RetractionView {
        guard following, !retraction.state.isFinished, retraction.state != .awaitingApproval else {
            return RetractionView(try await engine.status(of: retraction.id), app: app.name, seconds: nil)
        }
        return try await follow(retraction, app: app, engine: engine)
    }

    /// Prints the final account, as text or JSON, and exits with its code.
    static func show(_ account: RetractionView, json: Bool) throws {
        if json { try printJSON(account) } else { print(account.printed) }
        if account.exitCode != 0 { throw ExitCode(account.exitCode) }
    }

    /// The one selector given instead of references, with its range.
    private func selector() throws(RetractError) -> RetractionSelector? {
        let given = DeliveryLabels(thread: thread, sender: sender, recipient: recipient, campaign: campaign).given
        guard let (kind, value) = given.first else {
            if since != nil || until != nil {
                throw RetractError(.invalidInput, "--since and --until go with a selector: --thread, --sender, --recipient or --campaign")
            }
            return nil
        }
        if given.count > 1 {
            throw RetractError(
                .invalidInput, "give one selector, not \(given.map { "--\($0.kind.rawValue)" }.joined(separator: " and "))",
                field: "--\(given[1].kind.rawValue)")
        }
        return RetractionSelector(
            kind, value, sentAfter: try since.map { (text) throws(RetractError) in try Date(argument: text, flag: "--since") },
            sentBefore: try until.map { (text) throws(RetractError) in try Date(argument: text, flag: "--until") })
    }

    /// Works on the retraction in this process until it is finished, showing progress.
    static func follow(_ retraction: Retraction, app: App, engine: RetractEngine) async throws -> RetractionView {
        var display = ProgressDisplay()
        let worker = RetractionWorker(engine: engine)
        let workerEnded = NIOLockedValueBox(false)
        // The worker returns when the retraction is finished (or the database fails).
        let work = Task {
            defer { workerEnded.withLockedValue { $0 = true } }
            try await worker.finish([retraction.id])
        }
        while !workerEnded.withLockedValue({ $0 }) {
            try? await Task.sleep(for: .milliseconds(250))
            if let current = try? await engine.status(of: retraction.id) { display.show(current.retraction) }
        }
        do {
            try await work.value
        } catch {
            display.finish()
            throw error
        }
        let status = try await engine.status(of: retraction.id)
        display.show(status.retraction)
        display.finish()
        return RetractionView(status, app: app.name, seconds: display.elapsedSeconds)
    }
}

/// `retract status`: a retraction's state and counts.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a retraction's state and counts.",
        discussion: "Exit codes: 0 shown; 2 not a retraction id; 4 database unreachable; 7 no such retraction."
    )

    @Argument(help: "The retraction's id.")
    var id: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let account: RetractionView
        do {
            let uuid = try retractionID(id)
            account = try await database.withStore { store in
                let engine = RetractEngine(store: store, transports: PushTransports())
                return try await printedAccount(of: try await engine.status(of: uuid), engine: engine)
            }
        } catch {
            throw fail("status", error)
        }
        if json { try printJSON(account) } else { print(account.printed) }
    }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Stop a retraction: nothing more of it is sent.",
        discussion: """
            The pages of devices not yet in a worker's hands are dropped at once; the pages in flight \
            finish their pushes (state cancelling), then the retraction is cancelled, and the devices \
            not reached are counted as spared. It leaves the device feed, and deliveries of its \
            references recorded later are not retracted for it. Cancelling it again changes nothing, but \
            for dropping what a stopped worker left of one still cancelling. \
            The cancel and its reason go in the audit log.

            Exit codes: 0 cancelled (or cancelled before); 2 not a retraction id, or no reason; \
            4 database unreachable; 7 no such retraction; 10 it has ended (done, failed, rejected, expired) or is a dry run.
            """
    )

    @Argument(help: "The retraction's id.")
    var id: String

    @Option(help: "Why it is cancelled: kept in the audit log and shown with the retraction.")
    var reason: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let account: RetractionView
        let cancelledNow: Bool
        do {
            let uuid = try retractionID(id)
            let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !reason.isEmpty else { throw RetractError(.invalidInput, "--reason: say why the retraction is cancelled") }
            (account, cancelledNow) = try await database.withStore { store in
                let engine = RetractEngine(store: store, transports: PushTransports())
                let (status, cancelled) = try await engine.cancel(uuid, by: AppsCommand.Add.actor, reason: reason)
                do {
                    try await engine.forgetInFeed(uuid)
                } catch {
                    // The cancel holds; a server's chores take it out of the feed a minute on.
                    printError("retract cancel: cancelled, but still in the device feed (\(error)); a running server takes it out")
                }
                return (try await printedAccount(of: status, engine: engine), cancelled)
            }
        } catch {
            throw fail("cancel", error)
        }
        if json {
            try printJSON(account)
        } else {
            if !cancelledNow { printError("retract cancel: retraction \(account.id) was cancelled already; nothing changed") }
            print(account.printed)
        }
    }
}

/// `retract approve` and `retract reject`: the second pair of eyes on a
/// retraction awaiting approval.
struct ApproveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Approve a retraction awaiting approval: the server's workers send it.",
        discussion: """
            A retraction of more devices than its app's approval threshold waits, sending nothing, \
            until someone other than who asked approves or rejects it. Approved, its devices are \
            counted again (deliveries recorded while it waited are its own) and it is queued as if \
            made now, for the workers of `retract serve` to send (follow it with retract status). \
            The decision and its reason go in the audit log. On the command line, who asked and who \
            decides are told apart by $USER: an operator with the database's credentials can do \
            anything, so this keeps honest people honest; keys are the control.

            Exit codes: 0 approved; 2 not a retraction id, no reason, or you asked for it yourself; \
            4 database unreachable; 7 no such retraction; 10 it is not awaiting approval, or it expired.
            """
    )

    @OptionGroup var decision: DecisionOptions

    func run() async throws {
        try await decide(.approve, decision)
    }
}

struct RejectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reject",
        abstract: "Reject a retraction awaiting approval: nothing of it is sent.",
        discussion: """
            Only someone other than who asked may reject it. The decision and its reason go in the audit log.

            Exit codes: 0 rejected; 2 not a retraction id, no reason, or you asked for it yourself; \
            4 database unreachable; 7 no such retraction; 10 it is not awaiting approval, or it expired.
            """
    )

    @OptionGroup var decision: DecisionOptions

    func run() async throws {
        try await decide(.reject, decision)
    }
}

/// What `retract approve` and `retract reject` take.
struct DecisionOptions: ParsableArguments {
    @Argument(help: "The retraction's id.")
    var id: String

    @Option(help: "Why: kept in the audit log and shown with the retraction.")
    var reason: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions
}

extension ParsableCommand {
    /// Approves or rejects the retraction as the user at the terminal, and prints its account.
    fileprivate func decide(_ decision: RetractStore.ApprovalDecision, _ options: DecisionOptions) async throws {
        let (id, reason, json, database) = (options.id, options.reason, options.json, options.database)
        let command = decision.rawValue
        let account: RetractionView
        do {
            let uuid = try retractionID(id)
            let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !reason.isEmpty else { throw RetractError(.invalidInput, "--reason: say why the retraction is \(command)d") }
            account = try await database.withStore { store in
                let engine = RetractEngine(store: store, transports: PushTransports())
                let status = try await engine.decideApproval(of: uuid, decision, by: AppsCommand.Add.actor, keyID: nil, reason: reason)
                return try await printedAccount(of: status, engine: engine)
            }
        } catch {
            throw fail(command, error)
        }
        if json { try printJSON(account) } else { print(account.printed) }
    }
}

/// The retraction id a command was given.
private func retractionID(_ text: String) throws(RetractError) -> UUID {
    guard let uuid = UUID(uuidString: text) else { throw RetractError(.invalidInput, "\"\(text)\" is not a retraction id (a UUID)") }
    return uuid
}

/// A retraction's account as `retract status` and `retract cancel` print it.
private func printedAccount(of status: RetractionStatus, engine: RetractEngine) async throws -> RetractionView {
    let app = try await engine.app(id: status.retraction.appID)
    return RetractionView(status, app: app?.name ?? "\(status.retraction.appID)", seconds: nil)
}
