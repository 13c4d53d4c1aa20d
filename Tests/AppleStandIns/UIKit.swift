// UIKit, as Swift imports it from Apple's SDK: what RetractKit and its docs
// use. Sources (H, D): README.md beside this file.
@_exported import Foundation

/// H: UIApplication.h `typedef NS_ENUM(NSUInteger, UIBackgroundFetchResult) { ...NewData, ...NoData, ...Failed } API_AVAILABLE(ios(7.0));`
/// D: https://developer.apple.com/documentation/uikit/uibackgroundfetchresult (Sendable).
@available(iOS 7.0, *)
public enum UIBackgroundFetchResult: UInt, Sendable {
    case newData = 0
    case noData = 1
    case failed = 2
}

/// H: UIResponder.h `UIKIT_EXTERN API_AVAILABLE(ios(2.0)) NS_SWIFT_UI_ACTOR @interface UIResponder : NSObject`.
/// D: https://developer.apple.com/documentation/uikit/uiresponder (@MainActor).
@MainActor
open class UIResponder: NSObject {
    public override init() {}
}

/// H: UIApplication.h `UIKIT_EXTERN API_AVAILABLE(ios(2.0)) NS_SWIFT_UI_ACTOR @interface UIApplication : UIResponder`.
/// D: https://developer.apple.com/documentation/uikit/uiapplication (@MainActor).
@MainActor
open class UIApplication: UIResponder {
    /// H: `@property(class, nonatomic, readonly) UIApplication *sharedApplication NS_EXTENSION_UNAVAILABLE_IOS(...)`.
    /// D: https://developer.apple.com/documentation/uikit/uiapplication/shared
    @available(iOSApplicationExtension, unavailable, message: "Use view controller based solutions where appropriate instead.")
    open class var shared: UIApplication { standIn() }

    /// H: `- (void)registerForRemoteNotifications API_AVAILABLE(ios(8.0));` (category UIRemoteNotifications).
    /// D: https://developer.apple.com/documentation/uikit/uiapplication/registerforremotenotifications()
    @available(iOS 8.0, *)
    open func registerForRemoteNotifications() { standIn() }

    /// H: `typedef NSString * UIApplicationLaunchOptionsKey NS_TYPED_ENUM;`, UIKit.apinotes
    /// `SwiftName: UIApplication.LaunchOptionsKey`.
    /// D: https://developer.apple.com/documentation/uikit/uiapplication/launchoptionskey (Sendable).
    public struct LaunchOptionsKey: Hashable, RawRepresentable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }
}

/// H: UIApplication.h `NS_SWIFT_UI_ACTOR @protocol UIApplicationDelegate<NSObject>`, every method `@optional`.
/// D: https://developer.apple.com/documentation/uikit/uiapplicationdelegate (@MainActor).
/// Optional requirements need Objective-C: here they are requirements with
/// default implementations, which a conforming class satisfies the same way.
@MainActor
public protocol UIApplicationDelegate: NSObjectProtocol {
    /// H: `- (BOOL)application:(UIApplication *)application didFinishLaunchingWithOptions:(nullable NSDictionary<UIApplicationLaunchOptionsKey, id> *)launchOptions API_AVAILABLE(ios(3.0));`
    /// D: https://developer.apple.com/documentation/uikit/uiapplicationdelegate/application(_:didfinishlaunchingwithoptions:)
    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool

    /// H: `- (void)application:(UIApplication *)application didRegisterForRemoteNotificationsWithDeviceToken:(NSData *)deviceToken API_AVAILABLE(ios(3.0));`
    /// D: https://developer.apple.com/documentation/uikit/uiapplicationdelegate/application(_:didregisterforremotenotificationswithdevicetoken:)
    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data)

    /// H: `- (void)application:(UIApplication *)application didReceiveRemoteNotification:(NSDictionary *)userInfo fetchCompletionHandler:(void (^)(UIBackgroundFetchResult result))completionHandler API_AVAILABLE(ios(7.0));`
    /// D: https://developer.apple.com/documentation/uikit/uiapplicationdelegate/application(_:didreceiveremotenotification:fetchcompletionhandler:)
    /// (no `@Sendable`: the method is @MainActor, which SE-0463 leaves alone).
    @available(iOS 7.0, *)
    func application(
        _ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void)

    /// D: the async form of the above, on the same page.
    @available(iOS 7.0, *)
    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]) async -> UIBackgroundFetchResult
}

extension UIApplicationDelegate {
    public func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        standIn()
    }
    public func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) { standIn() }
    public func application(
        _ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
        fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void
    ) { standIn() }
    public func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]) async -> UIBackgroundFetchResult {
        standIn()
    }

    /// H: UIKit.swiftinterface `extension UIKit.UIApplicationDelegate { @_alwaysEmitIntoClient @_Concurrency.MainActor(unsafe) public static func main() }`,
    /// which calls UIApplicationMain; what `@main` on an app delegate runs.
    /// D: https://developer.apple.com/documentation/uikit/uiapplicationdelegate/main()
    @MainActor @preconcurrency
    public static func main() { standIn() }
}
