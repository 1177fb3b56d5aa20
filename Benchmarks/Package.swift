// swift-tools-version: 6.1
import PackageDescription

/// A benchmark target under `Benchmarks/<name>`, wired to Relay and package-benchmark.
func benchmark(_ name: String, alsoUsing products: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: [
            .product(name: "Relay", package: "Relay"),
            .product(name: "Benchmark", package: "benchmark"),
            "Measuring",
        ] + products,
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}

let package = Package(
    name: "RelayBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Relay", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        // P9 and P10 measure Relay's document beside GRDB on SQLite (the system's libsqlite3).
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        // P6a measures Relay over AsyncHTTPClient, from the Integrations package, beside AsyncHTTPClient alone.
        .package(name: "RelayIntegrations", path: "../Integrations"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        // P16 measures the logging, metrics and tracing observers on the libraries' no-op backends.
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        // P13 and P14 measure the fleet's store beside a queue written directly over postgres-nio.
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
    ],
    targets: [
        .target(
            name: "Measuring",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            path: "Support/Measuring"
        ),
        benchmark("Engine"),
        benchmark("Allocations"),
        benchmark("Document", alsoUsing: [.product(name: "GRDB", package: "GRDB.swift")]),
        benchmark("HTTP", alsoUsing: [.product(name: "RelayTesting", package: "Relay")]),
        benchmark(
            "Server",
            alsoUsing: [
                .product(name: "RelayTesting", package: "Relay"),
                .product(name: "RelayServer", package: "RelayIntegrations"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        benchmark(
            "Fleet",
            alsoUsing: [
                .product(name: "RelayTesting", package: "Relay"),
                .product(name: "RelayPostgres", package: "RelayIntegrations"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
