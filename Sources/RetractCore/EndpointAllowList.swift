import Foundation

/// Hosts the server may be made to send to by an API caller: an app's push
/// endpoint (`--allowed-endpoint`), a completion webhook
/// (`--allowed-webhook-host`). An API caller, even an administrator, must
/// not make the server sign provider tokens with an app's key, or post an
/// account, to a host of the caller's choosing.
package struct EndpointAllowList: Sendable {
    /// `host` or `host:port`; `https://` in front is allowed.
    package struct Entry: Hashable, Sendable {
        package var host: String
        package var port: Int?

        package init?(_ text: String) {
            var rest = Substring(text.lowercased())
            if rest.hasPrefix("https://") { rest = rest.dropFirst("https://".count) }
            if rest.hasSuffix("/") { rest = rest.dropLast() }
            var hostPart = rest
            var portPart: Substring?
            if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                // [v6 address] or [v6 address]:port
                hostPart = rest[rest.index(after: rest.startIndex)..<close]
                let after = rest[rest.index(after: close)...]
                if after.hasPrefix(":") { portPart = after.dropFirst() } else if !after.isEmpty { return nil }
            } else if rest.filter({ $0 == ":" }).count == 1, let colon = rest.firstIndex(of: ":") {
                hostPart = rest[..<colon]
                portPart = rest[rest.index(after: colon)...]
            }
            if let portPart {
                guard let number = Int(portPart), (1...65535).contains(number) else { return nil }
                port = number
            } else {
                port = nil
            }
            guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isLetter || $0.isNumber || ".-:".contains($0) }) else { return nil }
            host = String(hostPart)
        }
    }

    /// What an entry without a port allows.
    package enum PortlessEntry: Sendable {
        /// Every port: push endpoints, which Apple serves on 443 and 2197.
        case anyPort
        /// 443 only: webhooks. Another port must be named.
        case https
    }

    package let entries: [Entry]
    package let portless: PortlessEntry

    package init(_ entries: [String], portless: PortlessEntry = .anyPort) {
        self.entries = entries.compactMap(Entry.init)
        self.portless = portless
    }

    /// Whether `endpoint` (an `https://` URL) names an allowed host and port.
    package func allows(_ endpoint: String) -> Bool {
        guard let url = URLComponents(string: endpoint), let host = url.host?.lowercased() else { return false }
        return allows(host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: url.port ?? 443)
    }

    /// Whether the host (lowercase, an IPv6 address without brackets) and port are allowed.
    package func allows(host: String, port: Int) -> Bool {
        entries.contains { entry in
            guard entry.host == host else { return false }
            switch (entry.port, portless) {
            case (let allowed?, _): return allowed == port
            case (nil, .anyPort): return true
            case (nil, .https): return port == 443
            }
        }
    }
}
