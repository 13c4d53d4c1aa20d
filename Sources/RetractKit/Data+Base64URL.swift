import Foundation

extension Data {
    /// Base64url (RFC 4648 §5) without padding: JWTs, API keys and feed
    /// cursors. Package-only: not part of what apps import.
    package func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Reads base64url with or without padding; nil for anything else.
    package init?(base64URLEncoded text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
