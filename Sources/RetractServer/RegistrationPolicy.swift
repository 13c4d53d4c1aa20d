import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The hosts an app registered over the API may send to. An API caller,
/// even an administrator, must not make the server sign provider tokens with
/// an app's key and hand them to a host of the caller's choosing.
struct EndpointAllowList: Sendable {
    /// `host` (any port) or `host:port`; `https://` in front is allowed.
    struct Entry: Hashable, Sendable {
        var host: String
        var port: Int?

        init?(_ text: String) {
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

    let entries: [Entry]

    init(_ entries: [String]) {
        self.entries = entries.compactMap(Entry.init)
    }

    /// Whether `endpoint` (an `https://` URL) names an allowed host and port.
    func allows(_ endpoint: String) -> Bool {
        guard let url = URLComponents(string: endpoint), let host = url.host?.lowercased() else { return false }
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let port = url.port ?? 443
        return entries.contains { $0.host == bare && ($0.port == nil || $0.port == port) }
    }
}

/// Where credential files named over the API may be: under one folder, as
/// paths relative to it or absolute ones inside it. Symbolic links are
/// followed to check that the file is really inside, but the path is kept as
/// given: a secret mount that rotates its files by switching a link (as
/// Kubernetes does) keeps working. A path that leads outside is refused with
/// the same words whether or not the file exists, so the API tells nothing
/// of the rest of the server.
struct CredentialsFolder: Sendable {
    /// The folder as configured, `..` and `.` taken out.
    let path: String
    /// The folder with its symbolic links resolved.
    let resolved: String

    init?(_ directory: String) {
        guard let resolved = Self.resolve(directory) else { return nil }
        path = Self.standardized(directory)
        self.resolved = resolved
    }

    enum Refusal: Error, Equatable {
        /// The path leads outside the folder.
        case outside
        /// Inside the folder, but there is no such file.
        case missing
    }

    /// The file `given` names, as a path inside the folder, if it is there.
    func file(_ given: String) throws(Refusal) -> String {
        // `..` is taken out before anything on disk is looked at.
        let lexical = Self.standardized(given.hasPrefix("/") ? given : path + "/" + given)
        guard Self.isInside(lexical, path) || Self.isInside(lexical, resolved) else { throw .outside }
        guard let target = Self.resolve(lexical) else {
            // Whether a file is missing is told only when its folder, links resolved, is this one's too.
            let parent = URL(fileURLWithPath: lexical).deletingLastPathComponent().path
            guard let folder = Self.resolve(parent), folder == resolved || Self.isInside(folder, resolved) else { throw .outside }
            throw .missing
        }
        guard Self.isInside(target, resolved) else { throw .outside }
        return lexical
    }

    private static func isInside(_ candidate: String, _ folder: String) -> Bool {
        candidate.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/")
    }

    private static func standardized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    private static func resolve(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
