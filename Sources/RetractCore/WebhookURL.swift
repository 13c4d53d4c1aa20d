import Foundation

/// A webhook URL as it is shown to readers of an account or the audit log.
package enum WebhookURL {
    /// `url` as its scheme, host and port, and `/…` for whatever followed: a
    /// receiver's URL often carries its own secret, in the query
    /// (`?token=...`), the user part, or the path (Slack's and Discord's
    /// `/services/T0/B0/XXXX`), which a key that may only read has no use for.
    package static func redacted(_ url: String) -> String {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme, let host = parts.host else { return "(not a URL)" }
        let bare = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let port = parts.port.map { ":\($0)" } ?? ""
        let rest = parts.path.isEmpty || parts.path == "/" ? (parts.query == nil ? "" : "/…") : "/…"
        return "\(scheme)://\(bare)\(port)\(rest)"
    }
}
