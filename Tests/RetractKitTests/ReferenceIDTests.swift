import Foundation
import RetractKit
import Testing

@Suite("ReferenceID")
struct ReferenceIDTests {
    @Test func integerAndStringFormsAreTheSameReference() throws {
        let decoded = try JSONDecoder().decode([ReferenceID].self, from: Data(#"[233, "233", "msg-8812"]"#.utf8))
        #expect(decoded == [233, 233, "msg-8812"])
        #expect(decoded[0] == decoded[1])
        #expect(Set(decoded).count == 2)
        let literal: ReferenceID = 233
        #expect(literal.rawValue == "233")
        #expect(ReferenceID(UInt8(7)) == "7")
    }

    @Test func encodesAsStringByDefault() throws {
        #expect(try JSONEncoder().encode([ReferenceID(233), "x"]).utf8String == #"["233","x"]"#)
    }

    @Test func encodesAsIntegerWhenAsked() throws {
        let encoder = JSONEncoder()
        encoder.userInfo[ReferenceID.encodingStyleKey] = ReferenceID.EncodingStyle.integer
        #expect(try encoder.encode([ReferenceID(233), "-4"]).utf8String == "[233,-4]")
        #expect(throws: EncodingError.self) { try encoder.encode([ReferenceID("msg-1")]) }
    }

    @Test(
        arguments: [
            ("233", Int64(233)), ("-5", -5), ("0", 0), ("9223372036854775807", .max),
            ("0233", nil), ("+5", nil), ("2.0", nil), ("", nil), ("9223372036854775808", nil), (" 1", nil), ("1e3", nil),
        ] as [(String, Int64?)])
    func integerValueOnlyForExactDecimalIntegers(raw: String, integer: Int64?) {
        #expect(ReferenceID(raw).integerValue == integer)
    }

    @Test(arguments: ["true", "1.5", "null", #""""#, "{}", "[]"])
    func decodingRejectsWhatIsNotAReference(json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ReferenceID.self, from: Data(json.utf8)) }
    }
}
