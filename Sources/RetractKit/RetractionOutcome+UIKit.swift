#if canImport(UIKit) && !os(watchOS)
import UIKit

extension RetractionOutcome {
    /// `removed` is new data; anything else is no data.
    public var backgroundFetchResult: UIBackgroundFetchResult {
        if case .removed = self { return .newData }
        return .noData
    }
}

extension RetractionHandler {
    /// For `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`
    /// in an app with silent pushes of its own:
    ///
    /// ```swift
    /// if retraction.handleIfRetraction(userInfo: userInfo, fetchCompletionHandler: completionHandler) { return }
    /// // not a retraction: the app's own handling calls completionHandler
    /// ```
    ///
    /// - Returns: true when the push is a retraction, and `completionHandler`
    ///   is then called exactly once; false when it is not, and
    ///   `completionHandler` is not called.
    @MainActor
    public func handleIfRetraction(
        userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void
    ) -> Bool {
        handleIfRetraction(userInfo: userInfo) { report in completionHandler(report.outcome.backgroundFetchResult) }
    }

    /// For `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`
    /// in an app whose only silent pushes are retractions: always calls
    /// `completionHandler`, exactly once, so it must not sit next to code that
    /// calls it too.
    @MainActor
    public func handle(
        userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void
    ) {
        handle(userInfo: userInfo) { outcome in completionHandler(outcome.backgroundFetchResult) }
    }
}
#endif
