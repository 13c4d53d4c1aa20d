import Foundation
import RetractKit

/// The JWS compact serialisation both push services' tokens use:
/// `base64url(header).base64url(claims).base64url(signature)`, the
/// signature taken over the first two parts. The algorithms (ES256 for
/// APNs, RS256 for Google's assertions) are the callers'.
package enum CompactJWS {
    /// A signed token from the header and claims JSON and a signing function.
    package static func sign(header: String, claims: String, signature: (Data) throws -> Data) rethrows -> String {
        let signingInput = Data(header.utf8).base64URLEncodedString() + "." + Data(claims.utf8).base64URLEncodedString()
        return signingInput + "." + (try signature(Data(signingInput.utf8))).base64URLEncodedString()
    }

    /// A token's parts, decoded but not yet verified.
    package struct Parts: Sendable, Hashable {
        package var header: Data
        package var claims: Data
        package var signature: Data
        /// What the signature is over.
        package var signingInput: Data
    }

    /// The parts of `token`, or nil when it is not three base64url parts.
    package static func parse(_ token: Substring) -> Parts? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Data(base64URLEncoded: parts[0]), let claims = Data(base64URLEncoded: parts[1]),
            let signature = Data(base64URLEncoded: parts[2])
        else { return nil }
        return Parts(header: header, claims: claims, signature: signature, signingInput: Data(token[..<parts[1].endIndex].utf8))
    }
}
