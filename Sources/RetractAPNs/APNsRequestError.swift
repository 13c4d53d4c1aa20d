/// A request that cannot be sent as it is, found before it reaches the network.
public struct APNsRequestError: Error, Hashable, Sendable {
    /// The request field at fault.
    public enum Field: String, Hashable, Sendable {
        case deviceToken
        case topic
        case priority
        case body
        case collapseID
    }

    public var field: Field
    /// What is wrong with it, naming the value where that helps.
    public var reason: String

    public init(field: Field, reason: String) {
        self.field = field
        self.reason = reason
    }
}

extension APNsRequestError: CustomStringConvertible {
    public var description: String { "\(field.rawValue): \(reason)" }
}
