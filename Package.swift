// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Relay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Relay", targets: ["Relay"]),
        .library(name: "RelayTesting", targets: ["RelayTesting"]),
        .executable(name: "relay", targets: ["RelayCommand"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "Relay"),
        .target(name: "RelayTesting", dependencies: ["Relay"]),
        // The `relay` command; its demo serves scripted faults with RelayTesting's loopback server.
        .executableTarget(name: "RelayCommand", dependencies: ["Relay", "RelayTesting"], path: "Sources/relay"),
        // The process that the crash tests start and kill with SIGKILL.
        .executableTarget(
            name: "RelayCrashWorker",
            dependencies: ["Relay", "RelayTesting"],
            path: "Tests/RelayCrashWorker"
        ),
        .testTarget(
            name: "RelayTests", dependencies: ["Relay", "RelayTesting", "RelayCrashWorker", "RelayCommand"]),
    ],
    swiftLanguageModes: [.v6]
)
