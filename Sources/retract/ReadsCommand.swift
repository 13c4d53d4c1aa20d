import ArgumentParser
import Foundation
import RetractCore
import RetractDevSupport
import RetractKit
import RetractModel

/// `retract reads`: a recipient read a conversation; its other devices remove it.
struct ReadsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reads",
        abstract: "Tell a user's other devices that a conversation was read, so that they remove its notifications.",
        discussion: """
            Finds the deliveries of the conversation (--thread) to the user (--recipient) sent up \
            to the point read (--up-to, a time; or --up-to-reference, a message), on every device \
            of theirs but the one they read on (--reader), and sends each device one silent \
            background push naming what to remove; the device feed lists it too, for a phone the \
            push misses. A read is never an alert, never audited and never held for approval \
            (docs/reads.md). Without --no-wait the pushes are sent before the command ends; a \
            push to try again later is left to retract serve.
            """
    )

    @Option(help: "The app's name.")
    var app: String

    @Option(help: ArgumentHelp("The user who read: deliveries' recipient label.", valueName: "ID"))
    var recipient: String

    @Option(help: ArgumentHelp("The conversation read: deliveries' thread label.", valueName: "ID"))
    var thread: String

    @Option(help: ArgumentHelp("Read up to this time (ISO 8601), every message sent at or before it.", valueName: "TIME"))
    var upTo: String?

    @Option(help: ArgumentHelp("Read up to this message: those sent before it, and it.", valueName: "REFERENCE"))
    var upToReference: String?

    @Option(help: ArgumentHelp("The device token the user read on: not pushed.", valueName: "TOKEN"))
    var reader: String?

    @Option(help: ArgumentHelp("The app icon's badge the pushes set.", valueName: "N"))
    var badge: Int?

    @Flag(help: "Take the read and print what it took without sending; retract serve's courier sends.")
    var noWait = false

    @Flag(help: "Print what the read took as JSON.")
    var json = false

    @OptionGroup var scope: AccountOption
    @OptionGroup var engine: EngineOptions
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        lineBufferStandardOutput()
        let (receipt, pushes): (ReadReceipt, (finished: Int, owed: Int)?)
        do {
            let reader = try reader.map { (text) throws(RetractError) -> DeviceToken in
                guard let token = PushService.anyToken(text) else {
                    throw RetractError(.invalidInput, "--reader: \(PushService.fcm.tokenProblem(text))", field: "--reader")
                }
                return token
            }
            let upTo = try upTo.map { (text) throws(RetractError) in try Date(argument: text, flag: "--up-to") }
            let reference = try upToReference.map { try ReferenceID(argument: $0, name: "--up-to-reference \"\($0.prefix(80))\"") }
            (receipt, pushes) = try await engine.withEngine(database, lease: nil) { engine in
                let app = try await engine.app(named: app)
                let receipt = try await engine.read(
                    ReadRequest(
                        app: app, recipient: recipient, thread: thread, upTo: upTo, upToReference: reference, reader: reader, badge: badge,
                        account: scope.account))
                guard !noWait, receipt.devices > 0 else { return (receipt, nil) }
                return (receipt, try await ReadCourier(engine: engine).sendDue())
            }
        } catch {
            let flags = [
                "recipient": "--recipient", "thread": "--thread", "upTo": "--up-to", "upToReference": "--up-to-reference",
                "badge": "--badge", "account": "--account",
            ]
            throw fail("reads", (error as? RetractError)?.naming(flags) ?? error)
        }
        if json {
            var fields = [
                "\"id\":\"\(receipt.id.uuidString.lowercased())\"", "\"devices\":\(receipt.devices)", "\"deliveries\":\(receipt.deliveries)",
            ]
            if let upTo = receipt.upTo { fields.append("\"upTo\":\"\(upTo.formatted(.iso8601))\"") }
            if let pushes { fields += ["\"pushesFinished\":\(pushes.finished)", "\"pushesOwed\":\(pushes.owed)"] }
            print("{" + fields.joined(separator: ",") + "}")
            return
        }
        print("read \(receipt.id.uuidString.lowercased()): \(receipt.devices) devices, \(receipt.deliveries) deliveries")
        if let pushes {
            print("pushes: \(pushes.finished) finished, \(pushes.owed) owed (retract serve sends them)")
        }
    }
}
