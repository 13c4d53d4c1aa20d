import ArgumentParser
import Foundation
import RetractCore
import RetractDevSupport
import RetractKit
import RetractModel
import RetractStore

/// `retract record`: notes that a notification the caller sent reached some devices.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record that a notification you sent reached some devices.",
        discussion: """
            Recording the same delivery twice changes nothing. A delivery of a reference the app \
            has retracted already (its fan-out was still running) is retracted at once, in the \
            same mode: this command sends that retraction and prints its account, unless \
            --no-wait leaves it to the workers (retract serve).

            Exit codes: 0 recorded (and any late delivery retracted); 2 bad argument or token; \
            3 some late deliveries could not be retracted; 4 database unreachable; 6 unknown app.
            """
    )

    @Option(help: "The app's name.")
    var app: String

    @Option(help: "The notification's reference id.")
    var reference: String

    @Option(help: ArgumentHelp("When it was sent (ISO 8601); now when not given.", valueName: "DATE"))
    var sentAt: String?

    @Option(
        help: ArgumentHelp(
            "The apns-collapse-id (Android: notification tag) it was sent with, which a replace retraction replaces.",
            valueName: "ID"))
    var collapseID: String?

    @Flag(help: "Leave the retraction of late deliveries to the workers (retract serve) rather than sending it here.")
    var noWait = false

    @OptionGroup var labels: LabelOptions
    @OptionGroup var scope: AccountOption
    @OptionGroup var tokens: TokenOptions
    @OptionGroup var engine: EngineOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        // Lines in order with the progress on stderr, even into a pipe.
        lineBufferStandardOutput()
        var exitCode: Int32 = 0
        do {
            let service = tokens.transport
            let tokens = try tokens.read()
            let sentAt = try sentDate()
            let reference = try ReferenceID(argument: reference, name: "--reference")
            let (noWait, collapseID, labels, account) = (noWait, collapseID, labels.labels, scope.account)
            exitCode = try await engine.withEngine(database) { engine in
                let app = try await engine.app(named: app)
                let recorded = try await engine.recordReporting(
                    app: app, reference: reference, tokens: tokens, sentAt: sentAt, via: service, collapseID: collapseID, labels: labels,
                    account: account)
                print("recorded \(recorded.new) new deliveries of \(reference) (\(tokens.count) tokens given)")
                var exitCode: Int32 = 0
                // Sent here only where the app's credentials can be used; otherwise the workers (retract serve) send it.
                var canSend = !noWait
                if canSend, !recorded.lateRetractions.isEmpty {
                    do {
                        try engine.checkCredentials(of: app)
                    } catch {
                        print("the late deliveries' retraction is left to the workers (retract serve): \(error)")
                        canSend = false
                    }
                }
                for id in recorded.lateRetractions {
                    print("\(reference) was retracted already: retracting the new deliveries (retraction \(id.uuidString.lowercased()))")
                    guard canSend, let retraction = try await engine.store.retraction(id: id) else { continue }
                    let account = try await NotificationCommand.follow(retraction, app: app, engine: engine)
                    print(account.printed)
                    exitCode = max(exitCode, account.exitCode)
                }
                return exitCode
            }
        } catch let error as RetractError {
            throw fail(
                "record",
                error.naming(
                    ["sentAt": "--sent-at", "collapseId": "--collapse-id", "account": "--account"].merging(LabelOptions.flags) { a, _ in a }
                ))
        } catch {
            throw fail("record", error)
        }
        if exitCode != 0 { throw ExitCode(exitCode) }
    }

    private func sentDate() throws(RetractError) -> Date {
        guard let sentAt else { return Date() }
        return try Date(argument: sentAt, flag: "--sent-at")
    }
}

/// `retract send`: sends a notification through Retract and records it.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a notification through Retract and record who received it.",
        discussion: """
            The payload is the notification's JSON ({"aps": {...}, ...}); the reference is written \
            into its custom data, and apns-collapse-id is the reference unless told otherwise, so \
            a retraction finds it on the device either way.

            Every device is recorded before it is sent to, so a crash leaves none out of \
            the ledger. Exit codes: 0 every device accepted or dead; 2 bad argument, payload or \
            token; 3 some devices failed; 4 database unreachable; 6 unknown app; 8 unusable \
            APNs key or FCM service account; 9 APNs or FCM refused the app's credentials and \
            sending stopped.
            """
    )

    @Option(help: "The app's name.")
    var app: String

    @Option(help: "The reference id to write into the notification.")
    var reference: String

    @Option(help: ArgumentHelp("The notification's JSON payload.", valueName: "FILE"))
    var payload: String

    @Option(help: "apns-collapse-id; the reference when not given.")
    var collapseID: String?

    @Flag(help: "Send no apns-collapse-id.")
    var noCollapseID = false

    @Option(
        help: ArgumentHelp(
            "Through FCM, how Android phones show it: firebase (Firebase shows it, tagged with the collapse id or else the reference) "
                + "or app (a data message with the alert's title and body, which the app shows with RetractKit for Android).",
            valueName: "firebase|app"))
    var androidDisplay: AndroidDisplay = .firebase

    @Flag(help: "Print the account as JSON.")
    var json = false

    @OptionGroup var labels: LabelOptions
    @OptionGroup var scope: AccountOption
    @OptionGroup var tokens: TokenOptions
    @OptionGroup var engine: EngineOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let report: SendReport
        do {
            let service = tokens.transport
            let tokens = try tokens.read()
            let payload: Data
            do {
                payload = Data(try InputFile(path: self.payload).text().utf8)
            } catch {
                throw RetractError(.invalidInput, "--payload \(error)")
            }
            let collapse = try collapseChoice()
            let (labels, account) = (labels.labels, scope.account)
            let reference = try ReferenceID(argument: reference, name: "--reference")
            report = try await engine.withEngine(database) { engine in
                try await engine.send(
                    app: try await engine.app(named: app), reference: reference, tokens: tokens, payload: payload,
                    collapseID: collapse, labels: labels, via: service, androidDisplay: androidDisplay, account: account)
            }
        } catch let error as RetractError {
            throw fail(
                "send",
                error.naming(
                    ["payload": "--payload", "collapseID": "--collapse-id", "tokens": "--token", "account": "--account"].merging(
                        LabelOptions.flags
                    ) { a, _ in a }))
        } catch {
            throw fail("send", error)
        }
        if json {
            try printJSON(SendAccount(report))
        } else {
            print(
                "sent \(reference): \(report.accepted) accepted, \(report.dead.count) dead, \(report.failed) failed"
                    + " (\(report.recorded) new deliveries in the ledger)")
            for (reason, count) in report.failures.sorted(by: { $0.value > $1.value }) { print("  failed: \(count) × \(reason)") }
            for hint in report.hints { print("  hint: \(hint)") }
            if report.spared > 0 { print("  spared: \(report.spared) devices, never sent it: it was retracted while it was being sent") }
        }
        if report.stoppedBecause != nil { throw ExitCode(RetractExitCode.retractionFailed) }
        if report.failed > 0 { throw ExitCode(RetractExitCode.someFailed) }
    }

    private func collapseChoice() throws(RetractError) -> CollapseIDChoice {
        switch (collapseID, noCollapseID) {
        case (.some, true): throw RetractError(.invalidInput, "give --collapse-id or --no-collapse-id, not both")
        case (.some(let id), false): .custom(id)
        case (nil, true): CollapseIDChoice.none
        case (nil, false): .reference
        }
    }
}
