import Foundation

/// A file named on the command line, read as JSON.
struct InputFile {
    /// Why a file could not be used; printed as one line naming the file.
    struct Problem: Error, CustomStringConvertible {
        var path: String
        var reason: String

        var description: String { "\(path): \(reason)" }
    }

    var path: String

    /// The file's contents as UTF-8 text.
    func text() throws(Problem) -> String {
        String(decoding: try contents(), as: UTF8.self)
    }

    /// The file's contents parsed as JSON.
    func json() throws(Problem) -> Any {
        let data = try contents()
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            throw problem("not valid JSON" + (detail.map { " (\($0))" } ?? ""))
        }
    }

    private func contents() throws(Problem) -> Data {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw problem("is a directory, not a file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch CocoaError.fileReadNoSuchFile {
            throw problem("no such file")
        } catch CocoaError.fileReadNoPermission {
            throw problem("permission denied")
        } catch {
            throw problem("cannot be read (\((error as NSError).localizedDescription))")
        }
        return data
    }

    func problem(_ reason: String) -> Problem {
        Problem(path: path, reason: reason)
    }
}

/// Whether a Foundation object read from JSON is `true` or `false`: written
/// back as JSON it is, on every platform (`is Bool` holds for 0 and 1 on Linux).
func isJSONBoolean(_ value: Any) -> Bool {
    guard value is NSNumber, let written = try? JSONSerialization.data(withJSONObject: [value]) else { return false }
    return ["[true]", "[false]"].contains(String(decoding: written, as: UTF8.self))
}

/// What JSON value a Foundation object is, for messages.
func jsonKind(_ value: Any) -> String {
    switch value {
    case is String: "a string"
    case _ where isJSONBoolean(value): "a boolean"
    case is NSNumber: "a number"
    case is [Any]: "an array"
    case is [String: Any]: "an object"
    default: "null"
    }
}
