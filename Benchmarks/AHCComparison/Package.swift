// swift-tools-version: 6.1
// The transport Retract did not choose, kept so the comparison can be run
// again: the same background pushes as `retract-bench apns`, sent through
// AsyncHTTPClient (what APNSwift builds on). `scripts/bench apns --with-ahc`
// runs it against the same HTTP/2 sink.
import PackageDescription

let package = Package(
    name: "AHCComparison",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0")
    ],
    targets: [
        .executableTarget(
            name: "ahc-apns-bench",
            dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")]
        )
    ]
)
