import Foundation

/// What is wrong with a payload that RetractKit was asked to read or build.
///
/// `key` is a path into the payload, such as
/// `notificationCustomData.pushNotificationReferenceIds[2]`.
public enum RetractPayloadError: Error, Hashable, Sendable {
    /// Custom data given as a JSON string or `Data` that does not parse.
    case invalidJSON(key: String, reason: String)
    /// A value of the wrong JSON type.
    case wrongType(key: String, expected: String, found: String)
    /// A value of the right type that is not acceptable, such as an empty
    /// reference, `2` as a flag or `1.5` as an id.
    case invalidValue(key: String, reason: String)
    /// Two spellings of the removal flag disagree; reading takes the flag as
    /// set, as either spelling alone would have removed.
    case conflictingKeys(String, String)
    /// The legacy dialect carries integer ids only.
    case referenceNotAnInteger(ReferenceID)
    /// An encoded body over the APNs limit.
    case bodyTooLarge(size: Int, limit: Int)

    /// The path of the value the problem is at (for two keys that disagree,
    /// the first); nil for a problem of a whole body.
    public var key: String? {
        switch self {
        case .invalidJSON(let key, _), .wrongType(let key, _, _), .invalidValue(let key, _), .conflictingKeys(let key, _): key
        case .referenceNotAnInteger, .bodyTooLarge: nil
        }
    }

    /// How many bytes a ``bodyTooLarge(size:limit:)`` body is over its limit.
    public var bytesOverLimit: Int? {
        guard case .bodyTooLarge(let size, let limit) = self else { return nil }
        return size - limit
    }
}

extension RetractPayloadError: CustomStringConvertible, LocalizedError {
    public var description: String {
        switch self {
        case .invalidJSON(let key, let reason):
            "\(key): not valid JSON (\(reason))"
        case .wrongType(let key, let expected, let found):
            "\(key): expected \(expected), found \(found)"
        case .invalidValue(let key, let reason):
            "\(key): \(reason)"
        case .conflictingKeys(let key, let otherKey):
            "\(key) and \(otherKey) are both present with different values"
        case .referenceNotAnInteger(let reference):
            "reference \"\(reference)\" is not an integer, which the legacy dialect requires"
        case .bodyTooLarge(let size, let limit):
            "the payload is \(size) bytes, \(size - limit) over the \(limit)-byte limit"
        }
    }

    public var errorDescription: String? { description }
}
