// UserNotifications, as Swift imports it from Apple's SDK: what RetractKit
// and its docs use. Sources (H, D): README.md beside this file.
@_exported import Foundation

/// H: UNUserNotificationCenter.h `@interface UNUserNotificationCenter : NSObject`,
/// API_AVAILABLE(macos(10.14), ios(10.0), watchos(3.0), tvos(10.0)).
/// D: https://developer.apple.com/documentation/usernotifications/unusernotificationcenter
/// (not Sendable, not @MainActor: "use ... from any of your app's threads").
@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, *)
open class UNUserNotificationCenter: NSObject {
    /// H: `- (instancetype)init NS_UNAVAILABLE;`
    @available(*, unavailable)
    public override init() { standIn() }

    /// H: `+ (UNUserNotificationCenter *)currentNotificationCenter;`
    /// D: https://developer.apple.com/documentation/usernotifications/unusernotificationcenter/current()
    open class func current() -> UNUserNotificationCenter { standIn() }

    /// H: `- (void)getDeliveredNotificationsWithCompletionHandler:(void(^)(NSArray<UNNotification *> *notifications))completionHandler API_UNAVAILABLE(tvos);`
    /// D: https://developer.apple.com/documentation/usernotifications/unusernotificationcenter/getdeliverednotifications(completionhandler:)
    /// (`@Sendable` since Swift 6.2, SE-0463: nonisolated, with an async form).
    @available(tvOS, unavailable)
    open func getDeliveredNotifications(completionHandler: @escaping @Sendable ([UNNotification]) -> Void) { standIn() }

    /// D: the async form of the above, on the same page.
    @available(tvOS, unavailable)
    open func deliveredNotifications() async -> [UNNotification] { standIn() }

    /// H: `- (void)removeDeliveredNotificationsWithIdentifiers:(NSArray<NSString *> *)identifiers API_UNAVAILABLE(tvos);`
    /// D: https://developer.apple.com/documentation/usernotifications/unusernotificationcenter/removedeliverednotifications(withidentifiers:)
    /// ("executes asynchronously ... removing ... on a background thread"; no completion).
    @available(tvOS, unavailable)
    open func removeDeliveredNotifications(withIdentifiers identifiers: [String]) { standIn() }

    /// H: `- (void)addNotificationRequest:(UNNotificationRequest *)request withCompletionHandler:(nullable void(^)(NSError *__nullable error))completionHandler;`
    /// D: https://developer.apple.com/documentation/usernotifications/unusernotificationcenter/add(_:withcompletionhandler:)
    /// ("If the identifier matches a previously delivered notification, the
    /// system alerts the user again, replaces the old notification with the
    /// new one, and places the new notification at the top of the list").
    open func add(_ request: UNNotificationRequest, withCompletionHandler completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        standIn()
    }

    /// H: `- (void)setBadgeCount:(NSInteger)newBadgeCount withCompletionHandler:(nullable void(^)(NSError *__nullable error))completionHandler API_AVAILABLE(macos(13.0), ios(16.0), watchos(9.0), tvos(16.0));`
    /// D: https://developer.apple.com/documentation/usernotifications/unusernotificationcenter/setbadgecount(_:withcompletionhandler:)
    /// (the async form, `setBadgeCount(_:) async throws`, on the same page).
    @available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, *)
    open func setBadgeCount(_ newBadgeCount: Int) async throws { standIn() }
}

/// H: UNNotificationSound.h `@interface UNNotificationSound : NSObject <NSCopying, NSSecureCoding>`
/// API_UNAVAILABLE(tvos); here only as the type of `sound`.
/// D: https://developer.apple.com/documentation/usernotifications/unnotificationsound
@available(iOS 10.0, macOS 10.14, watchOS 3.0, *)
@available(tvOS, unavailable)
open class UNNotificationSound: NSObject {
    /// H: `+ (instancetype)defaultSound;`
    open class var `default`: UNNotificationSound { standIn() }
}

/// H: UNNotificationContent.h `typedef NS_ENUM(NSUInteger, UNNotificationInterruptionLevel)`
/// API_AVAILABLE(macos(12.0), ios(15.0), watchos(8.0), tvos(15.0)): passive, active, time-sensitive, critical.
/// D: https://developer.apple.com/documentation/usernotifications/unnotificationinterruptionlevel
/// ("passive: the system adds the notification to the notification list
/// without lighting up the screen or playing a sound").
@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
public enum UNNotificationInterruptionLevel: UInt, @unchecked Sendable {
    case passive = 0
    case active = 1
    case timeSensitive = 2
    case critical = 3
}

/// H: UNNotification.h `@interface UNNotification : NSObject <NSCopying, NSSecureCoding>`.
/// D: https://developer.apple.com/documentation/usernotifications/unnotification
@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, *)
open class UNNotification: NSObject {
    /// H: `- (instancetype)init NS_UNAVAILABLE;`
    @available(*, unavailable)
    public override init() { standIn() }

    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) NSDate *date;`
    open var date: Date { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) UNNotificationRequest *request;`
    /// D: https://developer.apple.com/documentation/usernotifications/unnotification/request
    open var request: UNNotificationRequest { standIn() }
}

/// H: UNNotificationRequest.h `@interface UNNotificationRequest : NSObject <NSCopying, NSSecureCoding>`.
/// D: https://developer.apple.com/documentation/usernotifications/unnotificationrequest
@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, *)
open class UNNotificationRequest: NSObject {
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) NSString *identifier;`
    open var identifier: String { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) UNNotificationContent *content;`
    open var content: UNNotificationContent { standIn() }

    /// H: `+ (instancetype)requestWithIdentifier:(NSString *)identifier content:(UNNotificationContent *)content trigger:(nullable UNNotificationTrigger *)trigger;`
    /// (the trigger's class is left out: nothing here uses it, so it is `AnyObject?`).
    public convenience init(identifier: String, content: UNNotificationContent, trigger: AnyObject?) { standIn() }

    /// H: `- (instancetype)init NS_UNAVAILABLE;`
    @available(*, unavailable)
    public override init() { standIn() }
}

/// H: UNNotificationContent.h `@interface UNNotificationContent : NSObject <NSCopying, NSMutableCopying, NSSecureCoding>`.
/// D: https://developer.apple.com/documentation/usernotifications/unnotificationcontent (not Sendable).
@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, *)
open class UNNotificationContent: NSObject, NSCopying, NSMutableCopying {
    /// D: `init()`, which makes empty content.
    public override init() {}

    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) NSString *title API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open var title: String { standIn() }
    /// H: as `title`.
    @available(tvOS, unavailable)
    open var subtitle: String { standIn() }
    /// H: as `title`.
    @available(tvOS, unavailable)
    open var body: String { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) NSString *threadIdentifier API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open var threadIdentifier: String { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy) NSDictionary *userInfo API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open var userInfo: [AnyHashable: Any] { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, copy, nullable) UNNotificationSound *sound API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open var sound: UNNotificationSound? { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, assign) UNNotificationInterruptionLevel interruptionLevel
    /// API_AVAILABLE(macos(12.0), ios(15.0), watchos(8.0), tvos(15.0));`
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    open var interruptionLevel: UNNotificationInterruptionLevel { standIn() }
    /// H: `@property (NS_NONATOMIC_IOSONLY, readonly, assign) double relevanceScore
    /// API_AVAILABLE(macos(12.0), ios(15.0), watchos(8.0), tvos(15.0));`
    /// D: https://developer.apple.com/documentation/usernotifications/unnotificationcontent/relevancescore
    /// (0 to 1: the notification summary ranks by it).
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    open var relevanceScore: Double { standIn() }

    /// H: NSCopying.
    open func copy(with zone: NSZone? = nil) -> Any { standIn() }
    /// H: NSMutableCopying; `mutableCopy()` (NSObject) returns an `UNMutableNotificationContent`.
    open func mutableCopy(with zone: NSZone? = nil) -> Any { standIn() }
}

/// H: UNNotificationContent.h `@interface UNMutableNotificationContent : UNNotificationContent`.
/// D: https://developer.apple.com/documentation/usernotifications/unmutablenotificationcontent
@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, *)
open class UNMutableNotificationContent: UNNotificationContent {
    public override init() {}

    /// H: `@property (NS_NONATOMIC_IOSONLY, copy) NSString *title API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open override var title: String {
        get { standIn() }
        set { standIn() }
    }
    /// H: as `title`.
    @available(tvOS, unavailable)
    open override var subtitle: String {
        get { standIn() }
        set { standIn() }
    }
    /// H: as `title`.
    @available(tvOS, unavailable)
    open override var body: String {
        get { standIn() }
        set { standIn() }
    }
    /// H: as `title`.
    @available(tvOS, unavailable)
    open override var threadIdentifier: String {
        get { standIn() }
        set { standIn() }
    }
    /// H: `@property (NS_NONATOMIC_IOSONLY, copy) NSDictionary *userInfo API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open override var userInfo: [AnyHashable: Any] {
        get { standIn() }
        set { standIn() }
    }
    /// H: `@property (NS_NONATOMIC_IOSONLY, copy, nullable) UNNotificationSound *sound API_UNAVAILABLE(tvos);`
    @available(tvOS, unavailable)
    open override var sound: UNNotificationSound? {
        get { standIn() }
        set { standIn() }
    }
    /// H: `@property (NS_NONATOMIC_IOSONLY, assign) UNNotificationInterruptionLevel interruptionLevel
    /// API_AVAILABLE(macos(12.0), ios(15.0), watchos(8.0), tvos(15.0));`
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    open override var interruptionLevel: UNNotificationInterruptionLevel {
        get { standIn() }
        set { standIn() }
    }
    /// H: `@property (NS_NONATOMIC_IOSONLY, assign) double relevanceScore
    /// API_AVAILABLE(macos(12.0), ios(15.0), watchos(8.0), tvos(15.0));`
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    open override var relevanceScore: Double {
        get { standIn() }
        set { standIn() }
    }
}

/// H: UNNotificationServiceExtension.h
/// `API_AVAILABLE(macos(10.14), ios(10.0), watchos(6.0)) API_UNAVAILABLE(tvos) @interface UNNotificationServiceExtension : NSObject`.
/// D: https://developer.apple.com/documentation/usernotifications/unnotificationserviceextension
/// (neither @MainActor nor Sendable: an extension written in a target whose
/// default isolation is MainActor must say `nonisolated`).
@available(iOS 10.0, macOS 10.14, watchOS 6.0, *)
@available(tvOS, unavailable)
open class UNNotificationServiceExtension: NSObject {
    public override init() {}

    /// H: `- (void)didReceiveNotificationRequest:(UNNotificationRequest *)request withContentHandler:(void (^)(UNNotificationContent *contentToDeliver))contentHandler;`
    /// D: https://developer.apple.com/documentation/usernotifications/unnotificationserviceextension/didreceive(_:withcontenthandler:)
    /// (no `@Sendable` and no async form: "contentHandler" is not a completion-handler name).
    open func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        standIn()
    }

    /// H: `- (void)serviceExtensionTimeWillExpire;`
    /// D: https://developer.apple.com/documentation/usernotifications/unnotificationserviceextension/serviceextensiontimewillexpire()
    open func serviceExtensionTimeWillExpire() { standIn() }
}

// Foundation's on Apple platforms, where UserNotifications re-exports
// Foundation; swift-corelibs-foundation has no App Groups, so it is declared
// here for RetractKit's `AppGroup`.
extension FileManager {
    /// H: NSFileManager.h `- (nullable NSURL *)containerURLForSecurityApplicationGroupIdentifier:(NSString *)groupIdentifier API_AVAILABLE(macos(10.8), ios(7.0), watchos(2.0), tvos(9.0));`
    /// D: https://developer.apple.com/documentation/foundation/filemanager/containerurl(forsecurityapplicationgroupidentifier:)
    /// (nil on iOS for a group not in the entitlements; on macOS a URL of the expected form always).
    @available(iOS 7.0, macOS 10.8, tvOS 9.0, watchOS 2.0, *)
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? { standIn() }
}
