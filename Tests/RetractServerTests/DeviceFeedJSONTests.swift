import Foundation
import NIOCore
import RetractCore
import Testing

@testable import RetractServer

/// The device feed's page is written without `JSONEncoder`: its bytes must
/// be the encoder's, whatever the page holds.
@Suite("Device feed JSON")
struct DeviceFeedJSONTests {
    /// Pages of 0 to 12 retractions of 1 to 4 references each, with
    /// references that need escaping or are not ASCII, and dates from 1601
    /// to 9999 with fractions of a second: byte for byte what `APIJSON` writes.
    @Test func aPageIsWrittenAsTheEncoderWritesIt() throws {
        var random = SystemRandomNumberGenerator()
        let characters = Array(#"ab-_:./\"é✓😀 Z9"#)
        for _ in 0..<2_000 {
            let entries = (0..<Int.random(in: 0...12, using: &random)).map { _ in
                DeviceFeedView.Entry(
                    id: UUID().uuidString.lowercased(),
                    references: (0..<Int.random(in: 1...4, using: &random)).map { _ in
                        String((0..<Int.random(in: 1...12, using: &random)).map { _ in characters.randomElement(using: &random)! })
                    },
                    retractedAt: Date(timeIntervalSince1970: Double.random(in: -11_644_473_600...253_402_300_799, using: &random)))
            }
            let view = DeviceFeedView(retractions: entries, cursor: UUID().uuidString, hasMore: Bool.random(using: &random))
            let written = String(buffer: view.json)
            let encoded = String(buffer: APIJSON.buffer(view))
            #expect(written == encoded)
            if written != encoded { return }
        }
    }

    /// Around the edges of days, months, leap years and the epoch, to the second and just before it.
    @Test func datesAreWrittenAsTheEncoderWritesThem() throws {
        let edges: [Double] = [
            0, -1, -0.5, 0.999, 86_399.999, 86_400, 951_782_400, 951_868_799.5, 1_709_164_800, 4_107_542_400, -2_203_891_200,
            253_402_300_799, -62_135_596_800,
        ]
        for seconds in edges {
            let date = Date(timeIntervalSince1970: seconds)
            var bytes: [UInt8] = []
            ISO8601Seconds.append(date, to: &bytes)
            let encoded = String(buffer: APIJSON.buffer([date]))
            #expect("[\"\(String(decoding: bytes, as: UTF8.self))\"]" == encoded, "\(seconds)")
        }
    }
}
