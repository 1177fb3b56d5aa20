// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Relay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Relay", targets: ["Relay"]),
        .library(name: "RelayTesting", targets: ["RelayTesting"]),
        .executable(name: "relay-demo", targets: ["RelayDemo"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "Relay"),
        .target(name: "RelayTesting", dependencies: ["Relay"]),
        .executableTarget(name: "RelayDemo", dependencies: ["Relay"], path: "Sources/relay-demo"),
        // The process that the crash tests start and kill with SIGKILL.
        .executableTarget(
            name: "RelayCrashWorker",
            dependencies: ["Relay", "RelayTesting"],
            path: "Tests/RelayCrashWorker"
        ),
        .testTarget(name: "RelayTests", dependencies: ["Relay", "RelayTesting", "RelayCrashWorker"]),
    ],
    swiftLanguageModes: [.v6]
)
