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
    ],
    targets: [
        .target(
            name: "Measuring",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            path: "Support/Measuring"
        ),
        benchmark("Engine"),
        benchmark("Allocations"),
        benchmark("Document"),
        benchmark("HTTP", alsoUsing: [.product(name: "RelayTesting", package: "Relay")]),
    ],
    swiftLanguageModes: [.v6]
)
