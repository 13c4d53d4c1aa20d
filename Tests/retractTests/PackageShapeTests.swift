import Foundation
import Testing

@Suite("Package shape")
struct PackageShapeTests {
    struct Manifest: Decodable {
        struct Target: Decodable {
            var name: String
            var dependencies: [TargetDependency]

            /// The targets of this package it depends on.
            var targetNames: Set<String> { Set(dependencies.compactMap { ($0.byName ?? $0.target)?.first ?? nil }) }
        }
        struct TargetDependency: Decodable {
            var byName: [String?]?
            var target: [String?]?
        }
        struct Product: Decodable {
            var name: String
            var type: [String: AnyValue]
        }
        struct AnyValue: Decodable {}
        struct Platform: Decodable {
            var platformName: String
            var version: String
        }
        struct Dependency: Decodable {
            struct Source: Decodable { var identity: String }
            var sourceControl: [Source]?
        }
        var targets: [Target]
        var products: [Product]
        var platforms: [Platform]
        var dependencies: [Dependency]

        /// The packages this one names, by identity (`hummingbird`).
        var packageIdentities: Set<String> { Set(dependencies.flatMap { $0.sourceControl?.map(\.identity) ?? [] }) }

        func floor(of platform: String) -> [Int]? {
            platforms.first { $0.platformName == platform }.map { PackageShapeTests.version($0.version) }
        }
    }

    /// The package's manifest, as SwiftPM reads it.
    static func manifest() throws -> Manifest {
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
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    static func version(_ text: some StringProtocol) -> [Int] {
        text.split(separator: ".").compactMap { Int($0) }
    }

    /// What outside packages may import: the client module, the two push
    /// clients and their simulators. The ledger, the engine and the server
    /// are the `retract` binary's, and their declarations `package`.
    @Test func theLibrariesAreTheModulesMeantForOthers() throws {
        let manifest = try Self.manifest()
        let libraries = manifest.products.filter { $0.type["library"] != nil }.map(\.name)
        #expect(Set(libraries) == ["RetractKit", "RetractAPNs", "RetractFCM", "APNsSimulator", "FCMSimulator"])
    }

    /// Each push client and each simulator stands on shared pieces, never on its sibling.
    @Test func modulesPointOneWay() throws {
        let targets = Dictionary(uniqueKeysWithValues: try Self.manifest().targets.map { ($0.name, $0.targetNames) })
        #expect(targets["RetractFCM"]?.contains("RetractAPNs") == false)
        #expect(targets["RetractAPNs"]?.contains("RetractFCM") == false)
        #expect(targets["FCMSimulator"]?.contains("APNsSimulator") == false)
        #expect(targets["APNsSimulator"]?.contains("FCMSimulator") == false)
        #expect(targets["RetractPush"] == ["RetractKit"])
        // The HTTP/2 pool both clients send through knows neither.
        #expect(targets["RetractHTTP2"]?.isDisjoint(with: ["RetractAPNs", "RetractFCM", "RetractPush", "RetractKit"]) == true)
        #expect(targets["RetractStore"]?.isDisjoint(with: ["RetractCore", "RetractServer"]) == true)
        #expect(targets["RetractModel"]?.isDisjoint(with: ["RetractStore", "RetractCore", "RetractServer"]) == true)
        // A throwaway PostgreSQL and Ctrl-C clean-up are the demo's and the tests', not the service's.
        for server in ["RetractModel", "RetractStore", "RetractCore", "RetractServer"] {
            #expect(targets[server]?.contains("RetractDevSupport") == false, "\(server)")
        }
        #expect(targets["RetractCore"]?.contains("RetractServer") == false)
    }

    /// The ledger's vocabulary is spoken by the store, the engine, the
    /// server and the CLI without bringing PostgreSQL or NIO along.
    @Test func theModelDependsOnRetractKitAlone() throws {
        let model = try #require(try Self.manifest().targets.first { $0.name == "RetractModel" })
        #expect(model.targetNames == ["RetractKit"])
        #expect(model.dependencies.count == 1)
        let sources = RetractCLI.packageRoot.appendingPathComponent("Sources/RetractModel")
        for file in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") }.map { $0.dropFirst("import ".count) }
            #expect(Set(imports).isSubset(of: ["Foundation", "RetractKit"]), "\(file) imports \(imports)")
        }
    }

    @Test func retractKitDependsOnNoPackage() throws {
        // iOS apps link RetractKit: it must stay Foundation-only as the package grows.
        let kit = try #require(try Self.manifest().targets.first { $0.name == "RetractKit" })
        #expect(kit.dependencies.isEmpty)
    }

    /// SwiftPM checks a package's one macOS floor against every dependency's
    /// declared one, and the packages the code calls mark their API with
    /// availabilities of their own (Hummingbird's "hummingbird 2.0"): the floor
    /// must meet the highest of them, or the package does not build on a Mac.
    /// RetractKit's iOS floor stays where apps already are.
    @Test func theMacOSFloorIsWhatTheServersDependenciesNeed() throws {
        let manifest = try Self.manifest()
        let checkouts = RetractCLI.packageRoot.appendingPathComponent(".build/checkouts")
        let packages = try FileManager.default.contentsOfDirectory(atPath: checkouts.path)
        #expect(packages.contains("hummingbird"), "\(packages)")
        var needed: [(package: String, version: [Int])] = []
        for package in packages {
            guard let text = try? String(contentsOf: checkouts.appendingPathComponent("\(package)/Package.swift"), encoding: .utf8) else {
                continue
            }
            // `.macOS(.v13)` in `platforms:` of every package; `macOS 14.0` in an availability macro of those the code calls.
            var patterns = [#"\.macOS\(\.v(\d+(?:_\d+)?)\)"#]
            if manifest.packageIdentities.contains(package) { patterns.append(#"AvailabilityMacro=[^"]*macOS (\d+(?:\.\d+)?)"#) }
            for pattern in patterns {
                let regex = try NSRegularExpression(pattern: pattern)
                for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    guard let range = Range(match.range(at: 1), in: text) else { continue }
                    needed.append((package, Self.version(text[range].replacingOccurrences(of: "_", with: "."))))
                }
            }
        }
        let highest = try #require(needed.max { $0.version.lexicographicallyPrecedes($1.version) })
        let macOS = try #require(manifest.floor(of: "macos"))
        #expect(!macOS.lexicographicallyPrecedes(highest.version), "macOS \(macOS) is below \(highest.package)'s \(highest.version)")
        #expect(manifest.floor(of: "ios") == [13, 0])
    }
}
