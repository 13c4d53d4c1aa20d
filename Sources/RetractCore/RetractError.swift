import Foundation
import RetractStore

/// Why an operation of the engine could not be done, with a message that
/// names the problem.
public struct RetractError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
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
        /// The app's APNs key or certificate is missing or unreadable.
        case credentials
        /// The database refused or failed; ``storeError`` says how.
        case store
    }

    public var code: Code
    public var message: String
    /// The store's error, when the database is the cause.
    public var storeError: StoreError?
    /// Files on the server that ``message`` names: an operator's business,
    /// left out of ``publicMessage``.
    public var paths: [String] = []
    /// When a send stopped on this error after sending to some devices: what
    /// it sent, to resume from rather than send again.
    public var partialSend: SendProgress?

    public init(_ code: Code, _ message: String, paths: [String] = []) {
        self.code = code
        self.message = message
        self.paths = paths
    }

    /// ``message`` without the server's file paths: what an API caller who
    /// is not an administrator may read.
    public var publicMessage: String {
        paths.filter { !$0.isEmpty }.sorted { $0.count > $1.count }.reduce(message) { text, path in
            text.replacingOccurrences(of: " \(path)", with: "").replacingOccurrences(of: path, with: "(a file on the server)")
        }
    }

    public init(_ error: StoreError) {
        code = .store
        message = error.message
        storeError = error
    }

    public var description: String { message }
}

extension RetractError {
    /// This error, carrying what a send had done when it stopped, if anything.
    func stoppingSend(_ progress: SendProgress) -> RetractError {
        var error = self
        if !progress.handled.isEmpty { error.partialSend = progress }
        return error
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

extension Duration {
    /// The duration in seconds, for rates and messages.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
