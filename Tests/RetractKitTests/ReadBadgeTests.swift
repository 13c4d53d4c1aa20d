import Foundation
import RetractKit
import Testing

/// A read's push (docs/reads.md) is a removal of references that may carry
/// the app icon's badge in its custom data, for the app to set.
@Suite("Reads: the badge")
struct ReadBadgeTests {
    @Test func aBodyWithABadgeCarriesItInTheCustomDataAndStaysABackgroundPush() throws {
        let builder = PayloadBuilder(dialect: .canonical, account: "acme", badge: 3)
        let (body, _) = try builder.retractionBody(for: [ReferenceID("m1")], addingWhatFitsOf: [ReferenceID("m2")])
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [AnyHashable: Any])
        #expect((object["aps"] as? [String: Any])?.keys.sorted() == ["content-available"])
        let read = RetractPayload.read(object)
        #expect(read.badge == 3)
        #expect(read.account == "acme")
        #expect(read.retraction == [ReferenceID("m1"), ReferenceID("m2")])
        #expect(read.diagnostics.isEmpty)
        // Without one, nothing is written: the bytes are the ones before reads existed.
        let plain = try PayloadBuilder().retractionBodies(for: [ReferenceID("m1")])[0]
        #expect(!String(decoding: plain, as: UTF8.self).contains(PayloadDialect.badgeKey))
    }

    @Test func aBadgeIsReadAsANumberOrAStringAndAnythingElseIsNamed() throws {
        for (value, expected) in [("0", 0), ("12", 12), (#""7""#, 7)] {
            let object = try userInfo(
                #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m1"],"isReferredNotificationMustRemoved":true,"pushNotificationBadge":\#(value)}}"#
            )
            #expect(RetractPayload.read(object).badge == expected, "\(value)")
        }
        for value in ["-1", "2.5", #""many""#, "true"] {
            let object = try userInfo(
                #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m1"],"isReferredNotificationMustRemoved":true,"pushNotificationBadge":\#(value)}}"#
            )
            let read = RetractPayload.read(object)
            #expect(read.badge == nil, "\(value)")
            // The removal still happens; the bad badge is named.
            #expect(read.retraction == [ReferenceID("m1")])
            #expect(read.diagnostics.contains { "\($0)".contains("pushNotificationBadge") }, "\(value)")
        }
    }
}
