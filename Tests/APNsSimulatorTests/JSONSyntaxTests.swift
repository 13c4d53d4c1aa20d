import APNsSimulator
import Foundation
import PropertyBased
import Testing

/// The simulator's check that a body is one JSON object, against
/// `JSONSerialization`, which it replaced for every body but an alert's.
///
/// They differ on two things: Linux's `JSONSerialization` takes a comma
/// before a closing bracket (`{"a":1,}`), which RFC 8259 does not, and
/// neither does the simulator now; and it reads text in UTF-16 or UTF-32,
/// which APNs does not.
@Suite("The simulator's JSON check")
struct JSONSyntaxTests {
    static func foundationSaysObject(_ bytes: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
    }

    /// Whether a comma, outside strings, comes right before a closing bracket.
    static func hasTrailingComma(_ bytes: [UInt8]) -> Bool {
        var inString = false
        var escaped = false
        var lastOutside: UInt8?
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            if [0x20, 0x09, 0x0A, 0x0D].contains(byte) { continue }
            if lastOutside == UInt8(ascii: ","), byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") { return true }
            if byte == UInt8(ascii: "\"") { inString = true }
            lastOutside = byte
        }
        return false
    }

    /// JSONSerialization's verdict, without the trailing comma it allows,
    /// and without the documents it reads as UTF-16 or UTF-32: it guesses
    /// the encoding from NUL bytes (`00 7B 00 7D` is `{}` in UTF-16), and a
    /// NUL byte is never in a UTF-8 JSON text, the only kind APNs takes.
    static func strictFoundationSaysObject(_ bytes: [UInt8]) -> Bool {
        foundationSaysObject(bytes) && !hasTrailingComma(bytes) && !bytes.contains(0)
    }

    static func syntaxSaysObject(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes(JSONSyntax.isObject)
    }

    static let objects = [
        #"{}"#,
        #" {"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["m1","m2"],"isReferredNotificationMustRemoved":true}} "#,
        #"{"a":[1,-0,0.5,-12.25e+3,4E-2,1e9,true,false,null,{},[],"",[[]]]}"#,
        #"{"s":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00 é 😀"}"#,
        "{\"a\":1,\"a\":2}",
        "\t{\r\n\"k\" : [ 1 , 2 ] }\n",
    ]

    static let notObjects = [
        "", " ", "[]", "\"s\"", "1", "null", "not json", "{", "}", "{}}", "{} {}", "{\"a\"}", "{\"a\":}", "{,}",
        "{\"a\" 1}", "{a:1}", "{'a':1}", "{\"a\":[,1]}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":1e}",
        "{\"a\":-}", "{\"a\":+1}", "{\"a\":tru}", "{\"a\":truex}", "{\"a\":nul}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\uD800\"}", "{\"a\":\"\\uDC00\"}", "{\"a\":\"\\uD800\\u0041\"}", "{\"a\":\"unterminated}", "{\"a\":\"tab\there\"}",
        "{\"a\":\"line\nbreak\"}", "{\"a\":1}x", "{\"a\":NaN}", "{\"a\":Infinity}",
    ]

    @Test func documentsEitherWay() {
        for document in Self.objects {
            #expect(Self.syntaxSaysObject(Array(document.utf8)), "\(document)")
            #expect(Self.foundationSaysObject(Array(document.utf8)), "\(document)")
        }
        for document in Self.notObjects {
            #expect(!Self.syntaxSaysObject(Array(document.utf8)), "\(document)")
            #expect(!Self.foundationSaysObject(Array(document.utf8)), "\(document)")
        }
        // `{}` in UTF-16, which a property check once made of `{}`: Foundation reads it, APNs and the simulator do not.
        let utf16: [UInt8] = [0x00, 0x7B, 0x00, 0x7D]
        #expect(!Self.syntaxSaysObject(utf16))
        #expect(!Self.strictFoundationSaysObject(utf16))
        for document in ["{\"a\":1,}", "{\"a\":[1,]}", "{\"a\":[1, ] }", "{\"a\":{\"b\":\",}\",},}"] {
            #expect(!Self.syntaxSaysObject(Array(document.utf8)), "\(document)")
            #expect(Self.hasTrailingComma(Array(document.utf8)), "\(document)")
        }
        #expect(!Self.hasTrailingComma(Array("{\"a\":\",}\"}".utf8)))
    }

    @Test func bytesThatAreNotUTF8AreRefused() {
        for bytes: [UInt8] in [[0xFF], [0xC3], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
            let document = Array(#"{"a":""#.utf8) + bytes + Array(#""}"#.utf8)
            #expect(!Self.syntaxSaysObject(document), "\(bytes)")
            #expect(!Self.foundationSaysObject(document), "\(bytes)")
        }
    }

    /// Found by the edits below: a number too large for a `Double`.
    @Test func numbersTooLargeForADoubleAreRefusedAsFoundationRefusesThem() {
        for number in ["1e729", "-1e400", "1" + String(repeating: "0", count: 400), "1e-729", "1e308", "123456789012345678901234567890"] {
            let bytes = Array(#"{"a":\#(number)}"#.utf8)
            #expect(Self.syntaxSaysObject(bytes) == Self.foundationSaysObject(bytes), "\(number)")
        }
        #expect(!Self.syntaxSaysObject(Array(#"{"a":1e729}"#.utf8)))
    }

    @Test func nestingStopsWhereFoundationStops() {
        func nested(_ depth: Int) -> [UInt8] {
            Array(("{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}").utf8)
        }
        for depth in [JSONSyntax.maximumDepth, JSONSyntax.maximumDepth + 1] {
            #expect(Self.syntaxSaysObject(nested(depth)) == Self.foundationSaysObject(nested(depth)), "depth \(depth)")
        }
        #expect(Self.syntaxSaysObject(nested(JSONSyntax.maximumDepth)))
        #expect(!Self.syntaxSaysObject(nested(JSONSyntax.maximumDepth + 1)))
    }

    /// A byte the edits put in: JSON's punctuation, the starts of its
    /// values, escapes, control characters and pieces of UTF-8.
    static let editBytes =
        Array(#"{}[]",:\ /0123456789-+.eEtrufalsnxD8"#.utf8) + [0x00, 0x09, 0x0A, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xED, 0xFF]

    /// A valid document with up to four bytes replaced, inserted or removed.
    static let edited = zip(
        Gen.element(of: objects),
        zip(Gen.int(in: 0...2), Gen.int(in: 0...10_000), Gen.element(of: editBytes)).array(of: 1...4)
    ).map { document, edits -> [UInt8] in
        var bytes = Array(document!.utf8)
        for (kind, place, byte) in edits {
            let index = place % (bytes.count + 1)
            switch kind {
            case 0 where index < bytes.count: bytes[index] = byte!
            case 1: bytes.insert(byte!, at: index)
            case 2 where index < bytes.count: bytes.remove(at: index)
            default: continue
            }
        }
        return bytes
    }

    @Test func editedDocumentsAreJudgedAsFoundationJudgesThemButForTrailingCommas() async {
        await propertyCheck(count: 3_000, input: Self.edited) { bytes in
            #expect(Self.syntaxSaysObject(bytes) == Self.strictFoundationSaysObject(bytes), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }
}
