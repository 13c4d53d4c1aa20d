import APNsSimulator
import Foundation
import RetractKit
import Testing

/// Which pushes light a phone's screen: every alert shown, but a passive one
/// on iOS 15 or later, and none an extension hid. The carriers are the
/// bodies `PayloadBuilder` writes; no network.
@Suite("Screen wakes")
struct ScreenWakeTests {
    typealias Phone = APNsSimulatedDevice.Phone

    /// `m1`'s original, an ordinary (active) alert with a sound, under its collapse id.
    static let original = PhoneReplayTests.push(
        type: "alert", collapseID: "m1", at: 0,
        #"{"aps":{"alert":{"body":"hi"},"sound":"default","mutable-content":1},"notificationCustomData":{"pushNotificationReferenceId":"m1"}}"#
    )

    /// A retraction of `m1` in `service-extension` mode, as the engine sends it.
    static func carrier(_ interruption: RetractionAPS.Interruption) throws -> APNsReceivedPush {
        let aps = RetractionAPS.alert(RetractionServiceExtension.defaultRetractionText, mutableContent: true, interruption: interruption)
        let body = try PayloadBuilder().retractionBodies(for: ["m1"], aps: aps)[0]
        return PhoneReplayTests.push(type: "alert", collapseID: "m1", at: 5, String(decoding: body, as: UTF8.self))
    }

    /// The same in `replace` mode.
    static func replacement(_ interruption: RetractionAPS.Interruption) throws -> APNsReceivedPush {
        let body = try PayloadBuilder().retractionBodies(for: ["m1"], aps: .alert("This message was deleted", interruption: interruption))[
            0]
        return PhoneReplayTests.push(type: "alert", collapseID: "m1", at: 5, String(decoding: body, as: UTF8.self))
    }

    @Test(arguments: [Phone.ServiceExtension.none, .unfiltered, .filtering])
    func aPassiveCarrierWakesNoPhoneOnIOS15OrLater(serviceExtension: Phone.ServiceExtension) async throws {
        for version in [IOSVersion(15, 0), IOSVersion(17, 4)] {
            let carrier = try Self.carrier(.passive)
            let screen = await APNsSimulatedDevice.replay(
                [Self.original, carrier], on: Phone(serviceExtension: serviceExtension, iOSVersion: version))
            // The original woke it; its retraction did not, whatever the phone shows for it.
            #expect(screen.woken == [Self.original.apnsID], "\(serviceExtension) on \(version)")
            #expect(!screen.wasWoken(byAnyOf: [carrier.apnsID]))
        }
    }

    @Test func aPassiveReplacementShowsInTheOriginalsPlaceWithoutWakingThePhone() async throws {
        let replacement = try Self.replacement(.passive)
        let screen = await APNsSimulatedDevice.replay([Self.original, replacement], on: Phone())
        #expect(screen.texts == ["m1": "This message was deleted"])
        #expect(screen.woken == [Self.original.apnsID])
        let loud = try Self.replacement(.active)
        #expect(await APNsSimulatedDevice.replay([Self.original, loud], on: Phone()).woken == [Self.original.apnsID, loud.apnsID])
    }

    @Test func beforeIOS15EveryCarrierShownLightsTheScreen() async throws {
        for serviceExtension in [Phone.ServiceExtension.none, .unfiltered] {
            let carrier = try Self.carrier(.passive)
            let screen = await APNsSimulatedDevice.replay(
                [Self.original, carrier], on: Phone(serviceExtension: serviceExtension, iOSVersion: IOSVersion(14, 8)))
            #expect(screen.wasWoken(byAnyOf: [carrier.apnsID]), "\(serviceExtension)")
        }
        // One the extension hides lights nothing, on any iOS that has the entitlement.
        let hidden = try Self.carrier(.active)
        let filtered = await APNsSimulatedDevice.replay(
            [Self.original, hidden], on: Phone(serviceExtension: .filtering, iOSVersion: IOSVersion(13, 3)))
        #expect(filtered.showing.isEmpty)
        #expect(filtered.woken == [Self.original.apnsID])
    }

    @Test func anActiveCarrierWakesThePhoneItShowsOn() async throws {
        let carrier = try Self.carrier(.active)
        let screen = await APNsSimulatedDevice.replay([Self.original, carrier], on: Phone(serviceExtension: .unfiltered))
        #expect(screen.woken == [Self.original.apnsID, carrier.apnsID])
    }

    @Test func beforeIOS13Point3TheFilteringEntitlementHidesNothing() async throws {
        let carrier = try Self.carrier(.passive)
        for (version, shows) in [(IOSVersion(13, 2), true), (IOSVersion(13, 3), false)] {
            let screen = await APNsSimulatedDevice.replay(
                [Self.original, carrier], on: Phone(serviceExtension: .filtering, iOSVersion: version))
            // The original is removed either way; below 13.3 the carrier itself shows, as sent, and lights the screen.
            #expect(screen.texts == (shows ? ["m1": "This message was deleted"] : [:]), "\(version)")
            #expect(screen.wasWoken(byAnyOf: [carrier.apnsID]) == shows, "\(version)")
        }
    }

    @Test func whatTheExtensionShowsInALateOriginalsPlaceIsPassive() async throws {
        // The carrier first, the original after: the extension shows the retraction text in the original's place.
        let carrier = PhoneReplayTests.push(
            type: "alert", collapseID: nil, at: 0,
            String(
                decoding: try PayloadBuilder().retractionBodies(
                    for: ["m1"], aps: .alert("gone", mutableContent: true))[0], as: UTF8.self))
        let late = PhoneReplayTests.push(
            type: "alert", collapseID: "m1", at: 5,
            #"{"aps":{"alert":{"body":"hi"},"sound":"default","mutable-content":1},"notificationCustomData":{"pushNotificationReferenceId":"m1"}}"#
        )
        let screen = await APNsSimulatedDevice.replay([carrier, late], on: Phone(serviceExtension: .unfiltered))
        #expect(screen.texts["m1"] == RetractionServiceExtension.defaultRetractionText)
        #expect(!screen.wasWoken(byAnyOf: [late.apnsID]))
        // On iOS 14 the extension cannot make it passive.
        let older = await APNsSimulatedDevice.replay(
            [carrier, late], on: Phone(serviceExtension: .unfiltered, iOSVersion: IOSVersion(14, 0)))
        #expect(older.wasWoken(byAnyOf: [late.apnsID]))
    }

    @Test func versionsReadAsUsersWriteThem() throws {
        #expect(IOSVersion("15") == IOSVersion(15, 0))
        #expect(IOSVersion("13.2.1") == IOSVersion(13, 2))
        for bad in ["", "x", "15.", "-1", "15.a", "1.2.3.4"] { #expect(IOSVersion(bad) == nil, "\(bad)") }
        let phone = try JSONDecoder().decode(Phone.self, from: Data(#"{"iOSVersion":"14.8"}"#.utf8))
        #expect(phone.iOSVersion == IOSVersion(14, 8))
        #expect(try JSONDecoder().decode(Phone.self, from: Data("{}".utf8)).iOSVersion == .current)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Phone.self, from: Data(#"{"iOSVersion":"new"}"#.utf8)) }
    }
}
