import Crypto
import Foundation

/// The `Retract-Signature` header of a webhook: `t=<unix seconds>,v1=<hex>`,
/// where `v1` is the lowercase hex HMAC-SHA256, keyed with the secret's
/// UTF-8 bytes, of `"<t>.<raw body>"`. The time in the signed text lets a
/// receiver refuse a replayed request (docs/api.md, "Verifying a webhook").
package struct WebhookSignature: Hashable, Sendable {
    package static let headerName = "Retract-Signature"

    package var timestamp: Int64
    /// Lowercase hex.
    package var v1: String

    package init(timestamp: Int64, v1: String) {
        self.timestamp = timestamp
        self.v1 = v1
    }

    /// Signs `body` with `secret` at `timestamp`.
    package init(body: some Collection<UInt8>, secret: String, timestamp: Int64) {
        self.timestamp = timestamp
        v1 = Self.mac(body: body, secret: secret, timestamp: timestamp)
    }

    /// The header's value.
    package var header: String { "t=\(timestamp),v1=\(v1)" }

    /// Reads a header's value; nil unless it has a `t` and a `v1`.
    package init?(header: String) {
        var timestamp: Int64?
        var v1: String?
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { v1 = pair[1] }
        }
        guard let timestamp, let v1 else { return nil }
        self.init(timestamp: timestamp, v1: v1)
    }

    /// Whether this signs `body` with `secret`, made within `tolerance` of `now`.
    package func verifies(body: some Collection<UInt8>, secret: String, now: Date = Date(), tolerance: TimeInterval = 300) -> Bool {
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = Array(Self.mac(body: body, secret: secret, timestamp: timestamp).utf8)
        let given = Array(v1.utf8)
        guard expected.count == given.count else { return false }
        // Constant time: a receiver's comparison must not tell how much of a guess was right.
        return zip(expected, given).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func mac(body: some Collection<UInt8>, secret: String, timestamp: Int64) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(timestamp).".utf8))
        hmac.update(data: Data(body))
        return hex(Array(hmac.finalize()))
    }

    /// A secret for an app that gave none: `whsec_` and 32 random bytes in hex.
    package static func makeSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return "whsec_" + hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
