import Foundation

extension NSLock {
    /// `withLock` is newer than RetractKit's deployment floor on Apple platforms.
    func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
