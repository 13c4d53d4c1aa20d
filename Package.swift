// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Retract",
    // iOS 13, tvOS 13 and watchOS 6 are RetractKit's floors: iOS apps import it.
    // macOS 14 is the server's: Hummingbird marks its API macOS 14 (its
    // "hummingbird 2.0" availability), swift-prometheus declares macOS 13, and
    // SwiftPM checks a package's one macOS floor against every dependency's.
    platforms: [.iOS(.v13), .macOS(.v14), .tvOS(.v13), .watchOS(.v6)],
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
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            // The HTTP/2 connection pool both push clients send through: streams driven on frames, connections added as the window needs them.
            name: "RetractHTTP2",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RetractAPNs",
            dependencies: [
                "RetractKit",
                "RetractPush",
                "RetractHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "APNsSimulator",
            dependencies: [
                "RetractAPNs",
                "RetractKit",
                "SimulatorSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            // Firebase Cloud Messaging HTTP v1: service accounts, OAuth2 tokens, messages:send.
            name: "RetractFCM",
            dependencies: [
                "RetractKit",
                "RetractPush",
                "RetractHTTP2",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            // A stand-in for Google's token endpoint and FCM's messages:send, over HTTP/2 and TLS.
            name: "FCMSimulator",
            dependencies: [
                "RetractFCM",
                "SimulatorSupport",
                "RetractKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RetractStore",
            dependencies: [
                "RetractKit",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // For ConnectionPoolError, which PostgresClient throws when it cannot connect.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
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
                "RetractStore",
                // Completion webhooks are POSTed through AsyncHTTPClient.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "RetractServer",
            dependencies: [
                "RetractKit",
                "RetractStore",
                "RetractCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // `openapi.yaml` links to docs/openapi.yaml, served at /openapi.yaml;
            // Console/Assets holds the console's templates, stylesheet and script.
            resources: [.embedInCode("openapi.yaml"), .embedInCode("Console/Assets")]
        ),
        .executableTarget(
            name: "retract",
            dependencies: [
                "SimulatorSupport",
                "RetractFCM",
                "FCMSimulator",
                "RetractKit",
                "RetractAPNs",
                "APNsSimulator",
                "RetractStore",
                "RetractCore",
                "RetractServer",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
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
                "RetractStore",
                "RetractCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            // The fault suite (scripts/chaos): the `retract` binary against simulators and a PostgreSQL that misbehave.
            name: "retract-chaos",
            dependencies: [
                "SimulatorSupport",
                "FCMSimulator",
                "RetractFCM",
                "RetractKit",
                "APNsSimulator",
                "RetractStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
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
                "RetractStore",
                "RetractKit",
                "APNsSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
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
                .product(name: "PropertyBased", package: "swift-property-based"),
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
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RetractStoreTests",
            dependencies: [
                "SimulatorSupport",
                "RetractStore",
                "RetractTestSupport",
                "RetractKit",
                "APNsSimulator",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
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
                "RetractStore",
                "RetractKit",
                // The errors a webhook attempt meets, to classify.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            // The HTTP API over real sockets, against a real ledger and the simulator.
            name: "RetractServerTests",
            dependencies: [
                "FCMSimulator",
                "RetractServer",
                "RetractCore",
                "RetractStore",
                "RetractKit",
                "RetractTestSupport",
                "APNsSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "RetractFCMTests",
            dependencies: [
                "RetractPush",
                "RetractFCM",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                "FCMSimulator",
                "RetractKit",
                "RetractAPNs",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "APNsSimulatorTests",
            dependencies: [
                "APNsSimulator", "RetractAPNs", "RetractHTTP2", "SimulatorSupport", "RetractTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            // Runs the built `retract` binary as a user would; depending on the
            // executable target makes `swift build --build-tests` build it.
            name: "retractTests",
            dependencies: [
                "PayloadVectors",
                "FCMSimulator",
                "retract",
                "RetractTestSupport",
                "APNsSimulator",
                "RetractCore",
                "RetractKit",
                "RetractAPNs",
                "RetractStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                // The simulator's fidelity tests send through a client no one here wrote.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ]
)
