import Foundation
import PropertyBased
import RetractKit
import Testing

@Suite("DeviceToken")
struct DeviceTokenTests {
    @Test func hexRoundTrips() async {
        await propertyCheck(input: Gen<UInt8>.value(in: 0...255).array(of: 1...100)) { bytes in
            let token = DeviceToken(bytes: bytes)
            #expect(DeviceToken(hex: token.hex) == token)
            #expect(DeviceToken(hex: token.hex.uppercased()) == token)
            #expect(token.hex.count == bytes.count * 2)
        }
    }

    /// Order and hash as the bytes' own: the order of arrays, equal tokens hashing equal.
    @Test func orderAndHashFollowTheBytes() async {
        // Few values, so that tokens often share a prefix, on both sides of 0x80.
        let bytes = Gen.int(in: 0...4).map { [0x00, 0x01, 0x7F, 0x80, 0xFF][$0] as UInt8 }.array(of: 0...4)
        await propertyCheck(input: bytes, bytes) { left, right in
            let (a, b) = (DeviceToken(bytes: left), DeviceToken(bytes: right))
            #expect((a < b) == left.lexicographicallyPrecedes(right))
            #expect((a == b) == (left == right))
            if a == b { #expect(a.hashValue == b.hashValue) }
            #expect(Set([a, b]).count == Set([left, right]).count)
        }
    }

    @Test(arguments: ["", "a", "abc", "zz", "0g", " 00", "00 ", "0x00", "é0"])
    func invalidHexIsRejected(hex: String) {
        #expect(DeviceToken(hex: hex) == nil)
    }

    @Test func appDataBecomesLowercaseHex() {
        #expect(DeviceToken(Data([0x00, 0xAB, 0xff])).hex == "00abff")
        #expect(DeviceToken(Data([0x01])) < DeviceToken(Data([0x01, 0x00])))
        #expect(DeviceToken(Data([0x02])) > DeviceToken(Data([0x01, 0xff])))
    }
}
