// FirebaseMessaging, as Swift imports it: what docs/client-integration.md
// uses. Source: firebase/firebase-ios-sdk,
// FirebaseMessaging/Sources/Public/FirebaseMessaging/FIRMessaging.h at
// 0d0c6849243677f9ece53b9e52a76be20565a35c.
@_exported import Foundation

/// `NS_SWIFT_NAME(MessagingMessageInfo) @interface FIRMessagingMessageInfo : NSObject`.
open class MessagingMessageInfo: NSObject {}

/// `NS_SWIFT_NAME(Messaging) @interface FIRMessaging : NSObject` (not actor-isolated, not Sendable).
open class Messaging: NSObject {
    /// `+ (instancetype)messaging NS_SWIFT_NAME(messaging());`
    open class func messaging() -> Messaging { standIn() }

    /// `- (FIRMessagingMessageInfo *)appDidReceiveMessage:(NSDictionary *)message;`
    /// (discardable, as Objective-C methods are when imported).
    @discardableResult
    open func appDidReceiveMessage(_ message: [AnyHashable: Any]) -> MessagingMessageInfo { standIn() }

    /// `- (void)tokenWithCompletion:(void (^)(NSString *_Nullable token, NSError *_Nullable error))completion;`
    /// (`@Sendable` since Swift 6.2, SE-0463).
    open func token(completion: @escaping @Sendable (String?, (any Error)?) -> Void) { standIn() }

    /// The async form Swift makes of `tokenWithCompletion:`.
    open func token() async throws -> String { standIn() }
}
