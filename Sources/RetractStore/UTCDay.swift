import Foundation
import NIOCore
import PostgresNIO
import RetractModel

/// A calendar day in UTC: the unit `deliveries` is partitioned by.
struct UTCDay: Hashable, Comparable, Sendable {
    /// Days since 1970-01-01.
    var number: Int

    init(number: Int) {
        self.number = number
    }

    init(containing date: Date) {
        number = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
    }

    /// `deliveries_YYYYMMDD`, the name of the day's partition.
    init?(partitionName: String) {
        let prefix = "deliveries_"
        guard partitionName.hasPrefix(prefix) else { return nil }
        let digits = partitionName.dropFirst(prefix.count)
        guard digits.count == 8, digits.allSatisfy(\.isASCII), let year = Int(digits.prefix(4)),
            let month = Int(digits.dropFirst(4).prefix(2)), let day = Int(digits.suffix(2)),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        number = GregorianDays.days(year: year, month: month, day: day)
    }

    var start: Date { Date(timeIntervalSince1970: TimeInterval(number) * 86_400) }

    func adding(days: Int) -> UTCDay { UTCDay(number: number + days) }

    /// `2026-11-23`, as PostgreSQL reads a date.
    var isoDate: String {
        let (year, month, day) = GregorianDays.civil(fromDays: number)
        return String(format: "%04d-%02d-%02d", year, month, day)
    }

    var partitionName: String { "deliveries_" + isoDate.replacingOccurrences(of: "-", with: "") }

    /// The device feed's partition of the same day (migration 0017).
    var feedPartitionName: String { "device_feed_" + isoDate.replacingOccurrences(of: "-", with: "") }

    static func < (lhs: UTCDay, rhs: UTCDay) -> Bool { lhs.number < rhs.number }
}

/// A `date` on the wire: days since 2000-01-01 in four bytes, so a day bound
/// is a constant when PostgreSQL plans (a `text` cast to `date` is not, and
/// then it cannot leave partitions out of the plan).
extension UTCDay: PostgresNonThrowingEncodable, PostgresDecodable {
    /// 2000-01-01, PostgreSQL's day zero.
    private static let postgresEpoch = 10_957

    /// `-infinity` and `infinity`: before and after every day.
    static let beforeAll = UTCDay(number: Int(Int32.min) + postgresEpoch)
    static let afterAll = UTCDay(number: Int(Int32.max) + postgresEpoch)

    static var psqlType: PostgresDataType { .date }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        byteBuffer.writeInteger(Int32(clamping: number - Self.postgresEpoch))
    }

    init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat, context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard type == .date, format == .binary else { throw PostgresDecodingError.Code.typeMismatch }
        guard buffer.readableBytes == 4, let days = buffer.readInteger(as: Int32.self) else { throw PostgresDecodingError.Code.failure }
        self.init(number: Int(days) + Self.postgresEpoch)
    }
}
