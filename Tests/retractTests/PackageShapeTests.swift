import Foundation
import Testing

@Suite("Package shape")
struct PackageShapeTests {
    @Test func retractKitDependsOnNoPackage() throws {
        // iOS apps link RetractKit: it must stay Foundation-only as the package grows.
        // A scratch folder of its own: `swift test` holds the lock on .build.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("retract-manifest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--scratch-path", scratch.path, "dump-package"]
        process.currentDirectoryURL = RetractCLI.packageRoot
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        struct Manifest: Decodable {
            struct Target: Decodable {
                var name: String
                var dependencies: [AnyDependency]
            }
            struct AnyDependency: Decodable {}
            var targets: [Target]
        }
        let manifest = try JSONDecoder().decode(Manifest.self, from: data)
        let kit = try #require(manifest.targets.first { $0.name == "RetractKit" })
        #expect(kit.dependencies.isEmpty)
    }
}
