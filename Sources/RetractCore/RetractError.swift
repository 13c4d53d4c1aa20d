import Foundation
import RetractModel
import RetractStore

/// Why an operation of the engine could not be done, with a message that
/// names the problem.
package struct RetractError: Error, CustomStringConvertible, Sendable {
    package enum Code: String, Sendable {
        /// An argument, a file or a payload is not acceptable.
        case invalidInput
        /// No app has that name.
        case unknownApp
        /// No delivery of these references was ever recorded for the app.
        case unknownReference
        /// No retraction has that id.
        case unknownRetraction
        /// No active API key has that id.
        case unknownKey
        /// An app of that name is registered already.
        case appExists
        /// The app's APNs key or certificate is missing or unreadable.
        case credentials
        /// The database refused or failed; ``storeError`` says how.
        case store
    }

    package var code: Code
    package var message: String
    /// The input at fault, when one is: `reference`, `tokens`, `payload`,
    /// `keyPath`; the API answers with it, the CLI names its flag.
    package var field: String?
    /// The store's error, when the database is the cause.
    package var storeError: StoreError?
    /// Files on the server that ``message`` names: an operator's business,
    /// left out of ``publicMessage``.
    package var paths: [String] = []
    /// When a send stopped on this error after sending to some devices: what
    /// it sent, to resume from rather than send again.
    package var partialSend: SendProgress?

    package init(_ code: Code, _ message: String, field: String? = nil, paths: [String] = []) {
        self.code = code
        self.message = message
        self.field = field
        self.paths = paths
    }

    /// An input that is not acceptable, naming its field.
    package init(_ problem: FieldProblem) {
        self.init(.invalidInput, problem.description, field: problem.field)
    }

    /// ``message`` without the server's file paths: what an API caller who
    /// is not an administrator may read.
    package var publicMessage: String {
        paths.filter { !$0.isEmpty }.sorted { $0.count > $1.count }.reduce(message) { text, path in
            text.replacingOccurrences(of: " \(path)", with: "").replacingOccurrences(of: path, with: "(a file on the server)")
        }
    }

    package init(_ error: StoreError) {
        code = .store
        message = error.message
        storeError = error
    }

    package var description: String { message }
}

extension RetractError {
    /// This error, carrying what a send had done when it stopped, if anything.
    func stoppingSend(_ progress: SendProgress) -> RetractError {
        var error = self
        if !progress.handled.isEmpty { error.partialSend = progress }
        return error
    }

    /// This error with its field renamed by `rename`, in the message too
    /// when the message starts with the field's name.
    package func renamingField(_ rename: (String) -> String) -> RetractError {
        guard let field else { return self }
        let renamed = rename(field)
        var error = self
        error.field = renamed
        if message.hasPrefix("\(field):") { error.message = renamed + message.dropFirst(field.count) }
        return error
    }

    /// This error with its field inside `prefix` (`[2].`), for an input
    /// that came as one of a list.
    package func within(_ prefix: String) -> RetractError {
        renamingField { prefix + $0 }
    }

    /// Runs a store operation, carrying its error as a ``RetractError``.
    static func store<Result>(_ body: () async throws(StoreError) -> Result) async throws(RetractError) -> Result {
        do {
            return try await body()
        } catch {
            throw RetractError(error)
        }
    }
}
