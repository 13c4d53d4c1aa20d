// What the docs' examples take from the rest of an app: a module that
// scripts/apple-compile imports into every Swift block of README.md and
// docs/*.md, whose own declarations shadow these. Not a stand-in: these are
// the app's own names.
import Foundation
import RetractKit

/// The app's `client` scope key for the device feed.
nonisolated public let clientKey = "rk_client_example"

/// The `RetractionHandler` the app delegate keeps (client-integration.md, step 3).
nonisolated public let handler = RetractionHandler(center: InMemoryNotificationCenter())

/// The device feed, as step 5 makes it.
nonisolated public let feed = RetractionFeed(baseURL: URL(string: "https://retract.example.com")!, apiKey: clientKey)

/// The app's logger.
nonisolated public let logger = AppLogger()

nonisolated public struct AppLogger: Sendable {
    public func warning(_ message: String) {}
}

extension AppLogger {
    public func info(_ message: String) {}
}

/// The `RetractionHandler` property of the app delegate (step 3), for the
/// methods shown without it.
nonisolated public let retraction = handler

/// The App Group as client-integration.md's step 3 names it (that block is
/// compiled on its own too).
nonisolated public let appGroup: AppGroup? = try? AppGroup("group.com.example.chat")
