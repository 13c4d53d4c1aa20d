import Foundation
import NIOCore
import RetractKit
import RetractModel

extension DeviceFeedView {
    /// The page's JSON, byte for byte what ``APIJSON`` writes (sorted keys,
    /// ISO 8601 dates to the second, slashes as they are), written directly:
    /// every phone reads its feed, and `JSONEncoder` took an eighth of the
    /// server's time on a full read (a profile of `scripts/bench feed`).
    /// The strings are ids, cursors and references, which hold no control
    /// characters (``ReferenceID/init(validating:field:)``); any other
    /// character is escaped as the encoder escapes it.
    var json: ByteBuffer {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + retractions.count * 96)
        bytes.append(contentsOf: #"{"cursor":"#.utf8)
        JSONText.appendQuoted(cursor, to: &bytes)
        bytes.append(contentsOf: hasMore ? #","hasMore":true,"retractions":["#.utf8 : #","hasMore":false,"retractions":["#.utf8)
        for (index, entry) in retractions.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            if let account = entry.account {
                bytes.append(contentsOf: #""account":"#.utf8)
                JSONText.appendQuoted(account, to: &bytes)
                bytes.append(UInt8(ascii: ","))
            }
            bytes.append(contentsOf: #""id":"#.utf8)
            JSONText.appendQuoted(entry.id, to: &bytes)
            bytes.append(contentsOf: #","references":["#.utf8)
            for (position, reference) in entry.references.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(reference, to: &bytes)
            }
            bytes.append(contentsOf: #"],"retractedAt":""#.utf8)
            ISO8601Seconds.append(entry.retractedAt, to: &bytes)
            bytes.append(contentsOf: #""}"#.utf8)
        }
        bytes.append(contentsOf: "]}".utf8)
        return ByteBuffer(bytes: bytes)
    }
}

/// A date as `JSONEncoder`'s `.iso8601` strategy writes it: UTC, to the
/// second (`2026-11-30T02:51:07Z`), the fraction dropped.
enum ISO8601Seconds {
    static func append(_ date: Date, to bytes: inout [UInt8]) {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (year, month, day) = GregorianDays.civil(fromDays: days)
        // Foundation's calendar is Julian before October 1582, and years past
        // 9999 take more digits: the encoder writes those, rare as they are.
        guard (1600...9999).contains(year) else {
            bytes.append(contentsOf: date.formatted(.iso8601).utf8)
            return
        }
        let time = seconds - days * 86_400
        append(year, digits: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(month, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(day, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        append(time / 3600, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(time / 60 % 60, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(time % 60, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    private static func append(_ value: Int, digits: Int, to bytes: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<digits { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}
