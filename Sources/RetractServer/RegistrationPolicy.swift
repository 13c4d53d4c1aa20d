import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
