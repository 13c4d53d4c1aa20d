import Foundation
import RetractServer
import Testing

/// docs/openapi.yaml and the server agree: every route registered is
/// described, and every path described is served.
@Suite("OpenAPI spec")
struct SpecTests {
    static let specPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.yaml")

    /// `METHOD /path` for every operation under `paths:`.
    static func operations(in yaml: String) -> Set<String> {
        var operations: Set<String> = []
        var inPaths = false
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if !line.hasPrefix(" "), !line.isEmpty {
                inPaths = line.hasPrefix("paths:")
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                let method = ["get", "post", "put", "patch", "delete", "head", "options"].first(where: { line == "    \($0):" })
            {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test func everyRouteTheServerRegistersIsInTheSpecAndNoOther() async throws {
        let spec = Self.operations(in: try String(contentsOf: Self.specPath, encoding: .utf8))
        #expect(spec.count >= 10)
        try await APIStage.with { stage in
            let registered = Set(stage.server.routes.routes.map(\.description))
            #expect(registered.count == 20)
            #expect(
                registered.subtracting(spec).isEmpty, "registered but not in docs/openapi.yaml: \(registered.subtracting(spec).sorted())")
            #expect(spec.subtracting(registered).isEmpty, "in docs/openapi.yaml but not served: \(spec.subtracting(registered).sorted())")
            // The spec the server serves is the file in docs/.
            let served = try await stage.call("GET", "/openapi.yaml")
            #expect(served.text == (try String(contentsOf: Self.specPath, encoding: .utf8)))
        }
    }
}
