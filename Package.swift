// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Relay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Relay", targets: ["Relay"]),
        .library(name: "RelayTesting", targets: ["RelayTesting"]),
        .library(name: "RelayCommandLine", targets: ["RelayCommandLine"]),
        .executable(name: "relay", targets: ["RelayCommand"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "Relay"),
        .target(name: "RelayTesting", dependencies: ["Relay"]),
        // The `relay` command's subcommands, which a package that brings another store builds its own command on; its
        // demo serves scripted faults with RelayTesting's loopback server.
        .target(name: "RelayCommandLine", dependencies: ["Relay", "RelayTesting"]),
        // The `relay` command, on folders.
        .executableTarget(name: "RelayCommand", dependencies: ["RelayCommandLine"]),
        // The process that the crash tests start and kill with SIGKILL.
        .executableTarget(
            name: "RelayCrashWorker",
            dependencies: ["Relay", "RelayTesting"],
            path: "Tests/RelayCrashWorker"
        ),
        .testTarget(
            name: "RelayTests",
            dependencies: ["Relay", "RelayTesting", "RelayCrashWorker", "RelayCommand", "RelayCommandLine"]),
    ],
    swiftLanguageModes: [.v6]
)
