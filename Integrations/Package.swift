// swift-tools-version: 6.1
import PackageDescription

// Relay's integrations with the server ecosystem, in a package of their own so that the core keeps no dependencies.
// The path below is the one line to change when this package moves to a repository of its own: it becomes
// `.package(url: "<Relay's repository URL>", branch: "main")`.
let package = Package(
    name: "RelayIntegrations",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RelayPostgres", targets: ["RelayPostgres"]),
        .library(name: "RelayServer", targets: ["RelayServer"]),
        .executable(name: "relay-postgres", targets: ["RelayPostgresCommand"]),
    ],
    dependencies: [
        .package(name: "Relay", path: ".."),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
    ],
    targets: [
        .target(
            name: "RelayPostgres",
            dependencies: [
                .product(name: "Relay", package: "Relay"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The `relay` command on a fleet's database too; `relay` runs it for a `postgres://` store.
        .executableTarget(
            name: "RelayPostgresCommand",
            dependencies: [
                "RelayPostgres",
                .product(name: "Relay", package: "Relay"),
                .product(name: "RelayCommandLine", package: "Relay"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Relay in a Swift server: its lifecycle under ServiceLifecycle, and logs, metrics and traces of its
        // operations.
        .target(
            name: "RelayServer",
            dependencies: [
                .product(name: "Relay", package: "Relay"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RelayServerTests",
            dependencies: [
                "RelayServer",
                .product(name: "RelayTesting", package: "Relay"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The process that the crash tests start and kill with SIGKILL.
        .executableTarget(
            name: "RelayPostgresWorker",
            dependencies: [
                "RelayPostgres",
                .product(name: "Relay", package: "Relay"),
                .product(name: "RelayTesting", package: "Relay"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/RelayPostgresWorker"
        ),
        .testTarget(
            name: "RelayPostgresTests",
            dependencies: [
                "RelayPostgres",
                "RelayPostgresWorker",
                "RelayPostgresCommand",
                .product(name: "RelayTesting", package: "Relay"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
