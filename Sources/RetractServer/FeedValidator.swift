import Crypto
import Foundation
import RetractKit
import RetractModel
import RetractStore

/// The strong ETag of a page of a device's feed: the page it validates (app,
/// device, cursor, page size), the horizon it was read at and how many
/// retractions it listed:
/// `"f1.<app>.<token digest>.<cursor xid>.<cursor id>.<limit>.<horizon>.<listed>"`,
/// and `.<account digest>` after for a page of one account's retractions (`?account=`).
///
/// Only a page that listed nothing is answered 304 Not Modified: what it
/// said ("nothing after this cursor") stays true until a retraction taking
/// one of the device's deliveries has a place past its horizon. Retention
/// only takes retractions away, which a page of none cannot miss. A page
/// that listed some is read again; a phone moves its cursor past it anyway.
struct FeedValidator: Hashable, Sendable {
    var appID: Int64
    /// The token's ``DeviceDigest``: a validator of one device is not another's.
    var device: UInt64
    var since: DeviceFeedCursor
    var limit: Int
    var horizon: UInt64
    var listed: Int
    /// The ``digest(_:)`` of the one account the page lists, or 0 for every account's.
    var account: UInt64

    /// - Parameter device: the token's ``DeviceDigest``.
    init(appID: Int64, device: UInt64, since: DeviceFeedCursor, limit: Int, horizon: UInt64, listed: Int, account: UInt64 = 0) {
        self.appID = appID
        self.device = device
        self.since = since
        self.limit = limit
        self.horizon = horizon
        self.listed = listed
        self.account = account
    }

    /// An account's part of a validator: the first 8 bytes of its SHA-256, never 0.
    static func digest(_ account: String) -> UInt64 {
        max(SHA256.hash(data: Array(account.utf8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, 1)
    }

    /// The header's value, quotes included.
    var etag: String {
        let scope = account == 0 ? "" : "." + String(account, radix: 16)
        return
            "\"f1.\(appID).\(String(device, radix: 16)).\(since.transaction).\(Self.hex(since.id)).\(limit).\(horizon).\(listed)\(scope)\""
    }

    /// Whether this validator, given back by a client, is for the page it asks
    /// for now (of the same account, or of every account) and said that
    /// nothing came after its cursor.
    func saidNothing(appID: Int64, device: UInt64, since: DeviceFeedCursor, limit: Int, account: UInt64 = 0) -> Bool {
        listed == 0 && self.appID == appID && self.device == device && self.since == since && self.limit == limit
            && self.account == account
    }

    /// Reads one ETag made by ``etag``; nil for anything else. Byte by byte:
    /// every phone's request carries one.
    init?(etag: Substring.UTF8View) {
        var bytes = etag[...]
        if bytes.starts(with: "W/".utf8) { bytes = bytes.dropFirst(2) }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return nil }
        let parts = bytes.dropFirst().dropLast().split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 8 || parts.count == 9, parts[0].elementsEqual("f1".utf8), let app = Self.number(parts[1], radix: 10),
            let device = Self.number(parts[2], radix: 16), let transaction = Self.number(parts[3], radix: 10),
            let id = Self.uuid(hex: parts[4]), let limit = Self.number(parts[5], radix: 10), let horizon = Self.number(parts[6], radix: 10),
            let listed = Self.number(parts[7], radix: 10), app <= UInt64(Int64.max), limit <= 1_000_000, listed <= 1_000_000
        else { return nil }
        appID = Int64(app)
        self.device = device
        since = DeviceFeedCursor(transaction: transaction, id: id)
        self.limit = Int(limit)
        self.horizon = horizon
        self.listed = Int(listed)
        if parts.count == 9 {
            guard let account = Self.number(parts[8], radix: 16), account != 0 else { return nil }
            self.account = account
        } else {
            account = 0
        }
    }

    /// The validators of an `If-None-Match` field: ours among its entity
    /// tags; others (and `*`, which names none of a feed's pages) are passed over.
    static func all(in field: String?) -> [FeedValidator] {
        guard let field, field.utf8.count <= 4096 else { return [] }
        let blank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        return field.utf8.split(separator: UInt8(ascii: ",")).compactMap { tag in
            let start = tag.firstIndex { !blank($0) } ?? tag.endIndex
            let end = tag.lastIndex { !blank($0) }.map { tag.index(after: $0) } ?? start
            return FeedValidator(etag: field.utf8[start..<max(start, end)])
        }
    }

    /// 1 to 20 digits of `radix` (10 or 16) as a number; nil for anything else.
    private static func number(_ digits: Substring.UTF8View.SubSequence, radix: UInt64) -> UInt64? {
        guard (1...20).contains(digits.count) else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard let next = HexDigits.value(of: digit), UInt64(next) < radix else { return nil }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: radix)
            guard !overflow else { return nil }
            let (sum, carry) = shifted.addingReportingOverflow(UInt64(next))
            guard !carry else { return nil }
            value = sum
        }
        return value
    }

    /// 32 lowercase hex digits.
    private static func hex(_ id: UUID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        withUnsafeBytes(of: id.uuid) { bytes in
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Reads ``hex(_:)``'s 32 digits; nil for anything else.
    private static func uuid(hex: Substring.UTF8View.SubSequence) -> UUID? {
        guard hex.count == 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        for (index, digit) in hex.enumerated() {
            guard let value = HexDigits.value(of: digit) else { return nil }
            bytes[index / 2] |= index.isMultiple(of: 2) ? value << 4 : value
        }
        return bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
    }
}
