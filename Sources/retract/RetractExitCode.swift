import ArgumentParser
import RetractCore
import RetractModel
import RetractStore

/// The exit codes of every command, documented in docs/configuration.md.
enum RetractExitCode {
    /// Any other error.
    static let other: Int32 = 1
    /// Bad input: an argument, a file, a URL, a payload.
    static let invalidInput: Int32 = 2
    /// Some devices could not be reached (`notification`, `send`).
    static let someFailed: Int32 = 3
    /// The database cannot be reached.
    static let unreachable: Int32 = 4
    /// The database's schema is not the one this binary knows, or a migration failed.
    static let schema: Int32 = 5
    /// No app has that name.
    static let unknownApp: Int32 = 6
    /// No delivery of the reference was recorded; or no retraction has that id.
    static let unknownReference: Int32 = 7
    /// The app's APNs key or certificate is missing or unreadable.
    static let credentials: Int32 = 8
    /// The retraction was stopped: APNs or FCM refused the app's credentials.
    static let retractionFailed: Int32 = 9
    /// The retraction was cancelled; or its state does not allow what was
    /// asked (cancelling one that ended; changing an app someone else
    /// changed meanwhile).
    static let cancelled: Int32 = 10
    /// The retraction waits for another key's approval: nothing is sent yet.
    static let awaitingApproval: Int32 = 11
    /// The retraction was rejected, or expired before anyone approved it: nothing was sent.
    static let notApproved: Int32 = 12

    static func of(_ error: StoreError) -> Int32 {
        switch error.code {
        case .invalidInput, .idempotencyConflict, .selfApproval: invalidInput
        case .connectionLost: unreachable
        case .schemaMismatch, .migrationFailed: schema
        case .stateConflict: cancelled
        // What the store reports missing is an app (a retraction is RetractError's).
        case .notFound: unknownApp
        default: other
        }
    }

    static func of(_ error: RetractError) -> Int32 {
        switch error.code {
        case .invalidInput, .appExists: invalidInput
        case .unknownApp: unknownApp
        case .unknownReference, .unknownRetraction, .unknownKey: unknownReference
        case .credentials: credentials
        case .store: error.storeError.map(of) ?? other
        }
    }
}

extension ParsableCommand {
    /// Prints `error` as one line naming the command and returns its exit code.
    func fail(_ command: String, _ error: any Error) -> ExitCode {
        switch error {
        case let error as StoreError:
            printError("retract \(command): \(error.message)")
            return ExitCode(RetractExitCode.of(error))
        case let error as RetractError:
            printError("retract \(command): \(error.message)")
            return ExitCode(RetractExitCode.of(error))
        case let problem as InputFile.Problem:
            printError("retract \(command): \(problem)")
            return ExitCode(RetractExitCode.invalidInput)
        case let exit as ExitCode:
            return exit
        default:
            printError("retract \(command): \(error)")
            return ExitCode(RetractExitCode.other)
        }
    }
}
