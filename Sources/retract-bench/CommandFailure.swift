/// A benchmark that could not run as it should, printed as one line.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
