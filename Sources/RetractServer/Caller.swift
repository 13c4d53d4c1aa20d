import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import RetractModel
import RetractStore

/// The API key a request came with, once checked.
struct Caller: Sendable {
    var key: APIKeyRecord

    /// Who did it, for the audit log and the logs: never the key itself.
    var actor: String { AuditEntry.apiKeyActor(name: key.name, id: key.id) }

    /// An admin key holds every scope.
    func require(_ scope: APIKeyRecord.Scope) throws(APIProblem) {
        guard key.scopes.contains(scope) || key.scopes.contains(.admin) else {
            let held = key.scopes.map(\.rawValue).sorted().joined(separator: ", ")
            throw APIProblem(.forbidden, "this needs the \(scope.rawValue) scope; the key has \(held)")
        }
    }

    /// Whether the key may touch the app; an admin key naming no app touches all.
    func mayTouch(appID: Int64) -> Bool {
        key.appIDs.isEmpty ? key.scopes.contains(.admin) : key.appIDs.contains(appID)
    }

    /// The apps whose records the key may touch, as ``mayTouch(appID:)``
    /// decides: nil for every app.
    var appsTouched: [Int64]? {
        key.appIDs.isEmpty ? (key.scopes.contains(.admin) ? nil : []) : Array(key.appIDs)
    }

    /// A key naming no app: it may register apps.
    var isForAllApps: Bool { key.appIDs.isEmpty && key.scopes.contains(.admin) }
}

/// API keys: how they look, how they are made and how they are checked.
package enum APIKeySecret {
    /// `rk_` and 43 base64url characters: 256 random bits.
    package static func generate() -> String {
        "rk_" + randomBase64URL()
    }

    /// 256 random bits as 43 base64url characters: the body of a key, and the console's session ids and form tokens.
    static func randomBase64URL() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }).base64URLEncodedString()
    }

    /// Whether `text` is 43 base64url characters, as ``randomBase64URL()`` makes.
    static func isRandomBase64URL(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 43
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
            }
    }

    /// What the ledger keeps of a key.
    package static func hash(_ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(key.utf8)))
    }

    /// Whether `text` has the shape of a key, checked before any lookup.
    static func isWellFormed(_ text: String) -> Bool {
        text.hasPrefix("rk_") && isRandomBase64URL(text.dropFirst(3))
    }

    /// Compares two hashes in time that does not depend on where they differ.
    ///
    /// Keys are looked up by their SHA-256, so the lookup's own timing can
    /// only tell an attacker about a hash prefix, which says nothing about any
    /// key. This comparison makes the final check independent of the stored
    /// value too, rather than trusting the index's match.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

    /// The key in an `Authorization: Bearer <key>` header.
    static func bearer(in request: Request) throws(APIProblem) -> String {
        let challenge: HTTPFields = [.wwwAuthenticate: #"Bearer realm="retract""#]
        guard let header = request.headers[.authorization] else {
            throw APIProblem(.unauthorized, "no Authorization header: send Authorization: Bearer <API key>", headers: challenge)
        }
        // Byte by byte: every request of every phone carries one.
        let scheme = "bearer".utf8
        let bytes = header.utf8
        let afterScheme = bytes.index(bytes.startIndex, offsetBy: scheme.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
        guard bytes[..<afterScheme].elementsEqual(scheme, by: { $0 | 0x20 == $1 }), afterScheme < bytes.endIndex,
            bytes[afterScheme] == UInt8(ascii: " ")
        else {
            throw APIProblem(.unauthorized, "the Authorization header is not \"Bearer <API key>\"", headers: challenge)
        }
        let blank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let rest = bytes[afterScheme...]
        let start = rest.firstIndex { !blank($0) } ?? rest.endIndex
        let end = rest.lastIndex { !blank($0) }.map { rest.index(after: $0) } ?? start
        let key = String(Substring(rest[start..<max(start, end)]))
        guard isWellFormed(key) else {
            throw APIProblem(.unauthorized, "the bearer token is not a Retract API key (rk_ and 43 characters)", headers: challenge)
        }
        return key
    }
}

