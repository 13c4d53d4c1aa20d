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

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public init(_ error: StoreError) {
        code = .store
        message = error.message
        storeError = error
    }

    public var description: String { message }
}

extension RetractError {
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
