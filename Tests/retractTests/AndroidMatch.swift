import Foundation

/// RetractKit for Android's command-line entry (`scripts/android-match`),
/// run as a user runs it, on the library scripts/android-test built
/// (scripts/test builds it first; built here when it is missing).
enum AndroidMatch {
    static let script = RetractCLI.packageRoot.appendingPathComponent("scripts/android-match")

    /// Whether the library is built, building it once per test process when it is not.
    static let built: Result<Void, CLIError> = {
        let classes = RetractCLI.packageRoot.appendingPathComponent(".build/android/classes/tools")
        if FileManager.default.fileExists(atPath: classes.path) { return .success(()) }
        do {
            let build = try RetractCLI.run(
                ["--build"], executable: RetractCLI.packageRoot.appendingPathComponent("scripts/android-test"))
            guard build.status == 0 else { return .failure(CLIError("scripts/android-test --build failed:\n\(build.stderr)")) }
            return .success(())
        } catch {
            return .failure(CLIError("scripts/android-test --build did not run: \(error)"))
        }
    }()

    static func run(_ arguments: [String]) throws -> RetractCLI.Result {
        try built.get()
        return try RetractCLI.run(arguments, executable: script)
    }

    /// The output with the JSON parser's own words for a value that is not
    /// JSON set aside: "not valid JSON (…)" is the same diagnostic from
    /// both, with the reason each parser gives.
    static func comparable(_ output: String) -> String {
        output.replacingOccurrences(of: #"not valid JSON \((?:[^"\\]|\\.)*\)"#, with: "not valid JSON (…)", options: .regularExpression)
    }
}
