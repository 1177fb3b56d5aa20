// swift-tools-version: 6.2
import PackageDescription

// Relay in a Hummingbird 2 service: the orders example, its test, and the server that the benchmarks load with wrk.
let package = Package(
    name: "RelayExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Relay", path: "../.."),
        .package(name: "RelayIntegrations", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
    ],
    targets: [
        // The orders service: a route that saves an order and enqueues its webhook and receipt in one commit.
        .target(
            name: "Orders",
            dependencies: [
                .product(name: "Relay", package: "Relay"),
                .product(name: "RelayServer", package: "RelayIntegrations"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // The service as a process.
        .executableTarget(
            name: "OrdersService",
            dependencies: [
                "Orders",
                .product(name: "Relay", package: "Relay"),
                .product(name: "RelayServer", package: "RelayIntegrations"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // The server that the benchmarks load with wrk: a webhook route through Relay, or through AsyncHTTPClient
        // alone, and the receiver of the webhooks.
        .executableTarget(
            name: "WebhookLoad",
            dependencies: [
                .product(name: "Relay", package: "Relay"),
                .product(name: "RelayServer", package: "RelayIntegrations"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "OrdersTests",
            dependencies: [
                "Orders",
                .product(name: "Relay", package: "Relay"),
                .product(name: "RelayTesting", package: "Relay"),
                .product(name: "RelayServer", package: "RelayIntegrations"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
