import Foundation

#if canImport(UserNotifications)
// Only to say where `containerURL(forSecurityApplicationGroupIdentifier:)`
// comes from: Foundation, on every platform that has UserNotifications
// (which re-exports Foundation there). App Groups exist on those platforms
// only.
import UserNotifications
#endif

/// An App Group the app and its Notification Service Extension share, known
/// to be in this target's entitlements: its container exists.
///
/// `UserDefaults(suiteName:)` does not check: for a group missing from one
/// target's App Groups capability it hands back a store private to that
/// process, and the app and the extension silently stop sharing tombstones
/// and the feed cursor. Storage made from an `AppGroup` cannot be that store.
///
/// ```swift
/// let group = try AppGroup("group.com.example.chat")   // throws AppGroupError when the entitlement is missing
/// let cursor = FeedCursor(appGroup: group)
/// let tombstones = Tombstones(storage: UserDefaultsTombstoneStorage(appGroup: group))
/// ```
public struct AppGroup: Hashable, Sendable {
    /// The group's identifier, such as `group.com.example.chat`: the
    /// `UserDefaults` suite its storage uses.
    public let identifier: String
    /// The group's shared container.
    public let containerURL: URL

    /// The group as the system knows it for this process: its container from
    /// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`,
    /// which iOS gives only to a target with the group in its entitlements.
    /// On macOS that call answers for any identifier, so the container must
    /// also exist. Off Apple platforms there are no App Groups, and this
    /// always throws: use ``init(identifier:containerURL:)``.
    public init(_ identifier: String) throws(AppGroupError) {
        #if canImport(UserNotifications)
        let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier)
        #else
        let container: URL? = nil
        #endif
        guard let container else { throw AppGroupError(identifier: identifier, problem: .noContainer) }
        try self.init(identifier: identifier, containerURL: container)
    }

    /// A group whose container is `containerURL`, a folder that must exist:
    /// for platforms without App Groups (Linux), and tests, where any folder
    /// the processes share stands in for the group's container.
    public init(identifier: String, containerURL: URL) throws(AppGroupError) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: containerURL.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw AppGroupError(identifier: identifier, problem: .containerMissing(containerURL))
        }
        // UserDefaults refuses the app's own bundle identifier and the global domain.
        guard UserDefaults(suiteName: identifier) != nil else {
            throw AppGroupError(identifier: identifier, problem: .refusedSuiteName)
        }
        self.identifier = identifier
        self.containerURL = containerURL
    }
}

/// An App Group that this process cannot use, and why.
public struct AppGroupError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Problem: Hashable, Sendable {
        /// The system knows no container for the group: it is missing from
        /// this target's App Groups capability (or this platform has none).
        case noContainer
        /// The container's folder does not exist.
        case containerMissing(URL)
        /// `UserDefaults` refuses the identifier as a suite name.
        case refusedSuiteName
    }

    public var identifier: String
    public var problem: Problem

    public init(identifier: String, problem: Problem) {
        self.identifier = identifier
        self.problem = problem
    }

    public var description: String {
        let fix =
            "add it under Signing & Capabilities › App Groups to the app target and to its Notification Service Extension target, both"
        switch problem {
        case .noContainer:
            #if canImport(UserNotifications)
            return "App Group \"\(identifier)\" has no container for this process: \(fix)"
            #else
            return "App Group \"\(identifier)\": this platform has no App Groups; use AppGroup(identifier:containerURL:) with a shared folder"
            #endif
        case .containerMissing(let url):
            return "App Group \"\(identifier)\" has no container at \(url.path): \(fix)"
        case .refusedSuiteName:
            return "App Group \"\(identifier)\": UserDefaults refuses it as a suite name (it is the app's bundle identifier or the global domain)"
        }
    }
}
