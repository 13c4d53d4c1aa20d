import Foundation

extension RetractionServiceExtension {
    /// Lets the extension read the device feed on each push it handles, so
    /// that a phone that was offline through a retraction (APNs keeps only
    /// the latest push for it) removes what it missed when the next push
    /// arrives:
    ///
    /// ```swift
    /// let catchUp = FeedCatchUp(
    ///     feed: RetractionFeed(baseURL: URL(string: "https://retract.example.com")!, apiKey: clientKey),
    ///     cursor: try FeedCursor(appGroup: "group.com.example.chat"))
    /// ```
    ///
    /// The read is bounded by ``budget``: past it, or when the feed cannot be
    /// read, the push is handled as it would be without catch-up, nothing is
    /// removed and the cursor stays where it was.
    public struct FeedCatchUp: Sendable {
        /// A few seconds: iOS gives an extension about 30 for each push, and
        /// the push waits for the catch-up.
        public static let defaultBudget: TimeInterval = 5
        /// Pages read per push; a device further behind goes on with the next push.
        public static let defaultMaximumPages = 5

        public var feed: RetractionFeed
        /// Where the app saved the device's token, and the cursor is kept.
        public var cursor: FeedCursor
        /// Seconds the push may wait for the feed.
        public var budget: TimeInterval
        public var maximumPages: Int

        public init(
            feed: RetractionFeed, cursor: FeedCursor, budget: TimeInterval = FeedCatchUp.defaultBudget,
            maximumPages: Int = FeedCatchUp.defaultMaximumPages
        ) {
            self.feed = feed
            self.cursor = cursor
            self.budget = budget
            self.maximumPages = maximumPages
        }

        /// What a catch-up did for one push.
        public enum Outcome: Hashable, Sendable {
            /// The extension has no ``FeedCatchUp``.
            case notConfigured
            /// The app has not saved the device's token in the ``FeedCursor`` yet.
            case noToken
            /// The feed was read: what it named, each reference within its
            /// account, and what of it was removed.
            case caughtUp(RetractionOutcome, references: RetractedReferences)
            /// The feed could not be read (no network, a refused key, an odd answer).
            case failed(RetractionFeed.FeedError)
            /// The feed did not answer within the budget.
            case timedOut
        }

        /// Reads the feed and removes what it names through `handler`, within the budget.
        func run(handler: RetractionHandler) async -> Outcome {
            let outcome = await withDeadline(seconds: budget) { () async -> Outcome in
                do throws(RetractionFeed.FeedError) {
                    guard let caughtUp = try await feed.catchUp(from: cursor, handler: handler, maximumPages: maximumPages) else {
                        return .noToken
                    }
                    return .caughtUp(caughtUp.outcome, references: caughtUp.references)
                } catch {
                    return .failed(error)
                }
            }
            return outcome ?? .timedOut
        }
    }
}
