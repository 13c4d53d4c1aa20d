// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Retract",
    // iOS 13 and watchOS 6 are RetractKit's floors: iOS apps import it. No
    // tvOS: it shows no notifications to take back (UserNotifications there
    // has no delivered list, no text and no userInfo).
    // macOS 14 is the server's: Hummingbird marks its API macOS 14 (its
    // "hummingbird 2.0" availability), swift-prometheus declares macOS 13, and
    // SwiftPM checks a package's one macOS floor against every dependency's.
    platforms: [.iOS(.v13), .macOS(.v14), .watchOS(.v6)],
    products: [
        .library(name: "RetractKit", targets: ["RetractKit"]),
        .library(name: "RetractAPNs", targets: ["RetractAPNs"]),
        .library(name: "APNsSimulator", targets: ["APNsSimulator"]),
        .library(name: "RetractFCM", targets: ["RetractFCM"]),
        .library(name: "FCMSimulator", targets: ["FCMSimulator"]),
        .executable(name: "retract", targets: ["retract"]),
        .executable(name: "retract-bench", targets: ["retract-bench"]),
        .executable(name: "retract-chaos", targets: ["retract-chaos"]),
    ],
    // Every package below is the server's: a target reaches one only through
    // `server(_:_:)`, so a client app that turns the `Server` trait off
    // (`traits: []` on its `.package` line) resolves none of them and builds
    // RetractKit alone. `swift build`, `swift run retract` and `swift test`
    // here have it on, as the default.
    traits: [
        .trait(name: "Server", description: "The service, its tools and their tests: everything but RetractKit."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Without swift-configuration support (its default trait): the server reads its settings in one place of its own.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The console's HTML: templates that escape what they show.
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // Foundation only: no package dependency may be added here.
        .target(name: "RetractKit"),
        // What the APNs and FCM clients share: the neutral verdict on a push, JWS compact tokens. Foundation only.
        .target(name: "RetractPush", dependencies: ["RetractKit"]),
        // Certificates made in memory, for the simulators and the tests that trust them.
        .target(
            name: "SimulatorSupport",
            dependencies: [
                server("Crypto", "swift-crypto"),
                server("X509", "swift-certificates"),
                server("SwiftASN1", "swift-asn1"),
            ]
        ),
        .target(
            // The HTTP/2 connection pool both push clients send through: streams driven on frames, connections added as the window needs them.
            name: "RetractHTTP2",
            dependencies: [
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHTTP2", "swift-nio-http2"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Logging", "swift-log"),
            ]
        ),
        .target(
            name: "RetractAPNs",
            dependencies: [
                "RetractKit",
                "RetractPush",
                "RetractHTTP2",
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHTTP2", "swift-nio-http2"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
            ]
        ),
        .target(
            name: "APNsSimulator",
            dependencies: [
                "RetractAPNs",
                "RetractKit",
                "SimulatorSupport",
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOTLS", "swift-nio"),
                server("NIOHTTP2", "swift-nio-http2"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Crypto", "swift-crypto"),
                server("NIOFoundationCompat", "swift-nio"),
                server("Logging", "swift-log"),
            ]
        ),
        .target(
            // Firebase Cloud Messaging HTTP v1: service accounts, OAuth2 tokens, messages:send.
            name: "RetractFCM",
            dependencies: [
                "RetractKit",
                "RetractPush",
                "RetractHTTP2",
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
                server("NIOFoundationCompat", "swift-nio"),
                server("Crypto", "swift-crypto"),
                server("_CryptoExtras", "swift-crypto"),
                server("Logging", "swift-log"),
            ]
        ),
        .target(
            // A stand-in for Google's token endpoint and FCM's messages:send, over HTTP/2 and TLS.
            name: "FCMSimulator",
            dependencies: [
                "RetractFCM",
                "SimulatorSupport",
                "RetractKit",
                server("Hummingbird", "hummingbird"),
                server("HummingbirdHTTP2", "hummingbird"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Crypto", "swift-crypto"),
                server("_CryptoExtras", "swift-crypto"),
                server("Logging", "swift-log"),
            ]
        ),
        .target(
            // What a process needs to run on a machine of its own and not only as a service: a throwaway
            // PostgreSQL cluster (and a TCP proxy standing for its address in a failover), clean-up on Ctrl-C,
            // stdout a line at a time. `retract demo` (the embedded default), the fault suite and the tests use
            // it; `retract serve` and the server modules do not.
            name: "RetractDevSupport",
            dependencies: [
                server("NIOConcurrencyHelpers", "swift-nio"), server("NIOCore", "swift-nio"), server("NIOPosix", "swift-nio"),
            ]
        ),
        .target(
            // The ledger's vocabulary (apps, deliveries, retractions, work items, selectors, modes, what went wrong),
            // shared by the store, the engine, the server and the CLI. Foundation and RetractKit only: no PostgreSQL, no NIO.
            name: "RetractModel",
            dependencies: ["RetractKit"]
        ),
        .target(
            name: "RetractStore",
            dependencies: [
                "RetractKit",
                "RetractModel",
                server("PostgresNIO", "postgres-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                // For ConnectionPoolError, which PostgresClient throws when it cannot connect.
                server("_ConnectionPoolModule", "postgres-nio"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
            ],
            // `Migrations` links to the top-level sql/ folder: the files there
            // are compiled into the binary, so it needs no resource bundle.
            resources: [.embedInCode("Migrations")]
        ),
        .target(
            name: "RetractCore",
            dependencies: [
                "RetractFCM",
                "RetractKit",
                "RetractPush",
                "RetractAPNs",
                "RetractModel",
                "RetractStore",
                // Completion webhooks are POSTed through AsyncHTTPClient.
                server("AsyncHTTPClient", "async-http-client"),
                server("Crypto", "swift-crypto"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
            ]
        ),
        .target(
            name: "RetractServer",
            dependencies: [
                "RetractKit",
                "RetractModel",
                "RetractStore",
                "RetractCore",
                server("Hummingbird", "hummingbird"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("UnixSignals", "swift-service-lifecycle"),
                server("HTTPTypes", "swift-http-types"),
                server("Prometheus", "swift-prometheus"),
                server("Metrics", "swift-metrics"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("Mustache", "swift-mustache"),
            ],
            // `openapi.yaml` links to docs/openapi.yaml, served at /openapi.yaml;
            // Console/Assets holds the console's templates, stylesheet and script.
            resources: [.embedInCode("openapi.yaml"), .embedInCode("Console/Assets")]
        ),
        .executableTarget(
            name: "retract",
            dependencies: [
                "RetractDevSupport",
                "SimulatorSupport",
                "RetractFCM",
                "FCMSimulator",
                "RetractKit",
                "RetractAPNs",
                "APNsSimulator",
                "RetractModel",
                "RetractStore",
                "RetractCore",
                "RetractServer",
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("Prometheus", "swift-prometheus"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("ArgumentParser", "swift-argument-parser"),
                server("NIOCore", "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "retract-bench",
            dependencies: [
                "SimulatorSupport",
                "RetractFCM",
                "FCMSimulator",
                "RetractKit",
                "RetractAPNs",
                "APNsSimulator",
                "RetractModel",
                "RetractStore",
                "RetractCore",
                server("ArgumentParser", "swift-argument-parser"),
                server("AsyncHTTPClient", "async-http-client"),
                server("Crypto", "swift-crypto"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("PostgresNIO", "postgres-nio"),
            ]
        ),
        .executableTarget(
            // The fault suite (scripts/chaos): the `retract` binary against simulators and a PostgreSQL that misbehave.
            name: "retract-chaos",
            dependencies: [
                "RetractDevSupport",
                "SimulatorSupport",
                "FCMSimulator",
                "RetractFCM",
                "RetractKit",
                "APNsSimulator",
                "RetractModel",
                "RetractStore",
                server("ArgumentParser", "swift-argument-parser"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("PostgresNIO", "postgres-nio"),
            ]
        ),
        // Shared by the test targets: scratch databases and a simulator with a key on disk.
        .target(
            name: "RetractTestSupport",
            dependencies: [
                "SimulatorSupport",
                "RetractCore",
                "RetractAPNs",
                "FCMSimulator",
                "RetractFCM",
                "RetractModel",
                "RetractStore",
                "RetractKit",
                "APNsSimulator",
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("PostgresNIO", "postgres-nio"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                server("NIOConcurrencyHelpers", "swift-nio"),
            ],
            path: "Tests/RetractTestSupport"
        ),
        .target(
            // Tests/Vectors/payloads.json, the payload cases every client is
            // checked against, and their loader; used by RetractKit's tests
            // and `retract match`'s.
            name: "PayloadVectors",
            path: "Tests/Vectors",
            exclude: ["payloads.json"]
        ),
        .testTarget(
            name: "RetractKitTests",
            dependencies: [
                "RetractKit",
                "PayloadVectors",
                server("PropertyBased", "swift-property-based"),
            ]
        ),
        .testTarget(
            // The HTTP/2 pool's own tests: its routing and backoff (ConnectionSlots), and one connection's
            // streams driven frame by frame on NIO's EmbeddedChannel.
            name: "RetractHTTP2Tests",
            dependencies: [
                "RetractHTTP2",
                server("NIOCore", "swift-nio"),
                server("NIOEmbedded", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOHTTP2", "swift-nio-http2"),
                server("NIOHPACK", "swift-nio-http2"),
            ]
        ),
        .testTarget(
            name: "RetractAPNsTests",
            dependencies: [
                "RetractAPNs",
                "RetractHTTP2",
                "RetractPush",
                "SimulatorSupport",
                "APNsSimulator",
                "RetractKit",
                server("MetricsTestKit", "swift-metrics"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RetractStoreTests",
            dependencies: [
                "RetractDevSupport",
                "SimulatorSupport",
                "RetractModel",
                "RetractStore",
                "RetractTestSupport",
                "RetractKit",
                "APNsSimulator",
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("PostgresNIO", "postgres-nio"),
                server("Logging", "swift-log"),
            ]
        ),
        .testTarget(
            name: "RetractCoreTests",
            dependencies: [
                "SimulatorSupport",
                "RetractPush",
                "RetractFCM",
                "FCMSimulator",
                "RetractCore",
                "RetractTestSupport",
                "APNsSimulator",
                "RetractAPNs",
                "RetractModel",
                "RetractStore",
                "RetractKit",
                // The errors a webhook attempt meets, to classify.
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
            ]
        ),
        .testTarget(
            // The HTTP API over real sockets, against a real ledger and the simulator.
            name: "RetractServerTests",
            dependencies: [
                "FCMSimulator",
                "RetractServer",
                "RetractCore",
                "RetractModel",
                "RetractStore",
                "RetractKit",
                "RetractTestSupport",
                "APNsSimulator",
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("PostgresNIO", "postgres-nio"),
                server("Prometheus", "swift-prometheus"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "RetractFCMTests",
            dependencies: [
                "RetractPush",
                "RetractFCM",
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOSSL", "swift-nio-ssl"),
                "FCMSimulator",
                "RetractKit",
                "RetractAPNs",
                server("_CryptoExtras", "swift-crypto"),
                server("NIOCore", "swift-nio"),
            ]
        ),
        .testTarget(
            name: "APNsSimulatorTests",
            dependencies: [
                "APNsSimulator", "RetractAPNs", "RetractHTTP2", "SimulatorSupport", "RetractTestSupport",
                server("Crypto", "swift-crypto"),
                server("PropertyBased", "swift-property-based"),
            ]
        ),
        .testTarget(
            // Runs the built `retract` binary as a user would; depending on the
            // executable target makes `swift build --build-tests` build it.
            name: "retractTests",
            dependencies: [
                "RetractDevSupport",
                "PayloadVectors",
                "FCMSimulator",
                "retract",
                "RetractTestSupport",
                "APNsSimulator",
                "RetractCore",
                "RetractKit",
                "RetractAPNs",
                "RetractModel",
                "RetractStore",
                server("Crypto", "swift-crypto"),
                server("Logging", "swift-log"),
                server("PostgresNIO", "postgres-nio"),
                server("NIOCore", "swift-nio"),
                // The simulator's fidelity tests send through a client no one here wrote.
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOSSL", "swift-nio-ssl"),
            ]
        ),
    ]
)

/// A product of one of the server's packages, depended on only with the
/// `Server` trait.
func server(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: ["Server"]))
}
