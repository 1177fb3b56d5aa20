// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "RelayBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Relay", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Engine",
            dependencies: [
                .product(name: "Relay", package: "Relay"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Engine",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Allocations",
            dependencies: [
                .product(name: "Relay", package: "Relay"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Allocations",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
