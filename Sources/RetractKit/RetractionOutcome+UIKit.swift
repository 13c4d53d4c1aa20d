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
    /// For `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`:
    /// always calls `completionHandler`, exactly once.
    @MainActor
    public func handle(
        userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void
    ) {
        handle(userInfo: userInfo) { outcome in completionHandler(outcome.backgroundFetchResult) }
    }
}
#endif
