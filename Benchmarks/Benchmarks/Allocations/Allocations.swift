import Benchmark
import Foundation
import Relay

/// Allocations per operation, the benchmarks' deterministic metric, guarded by the committed p90 thresholds.
///
/// With a scaling factor of 1,000 and 1,000 operations per iteration, the scaled malloc count reads per operation.
/// A regression of more than half an allocation per operation at p90 fails `thresholds check`.
let benchmarks: @Sendable () -> Void = {
    let guarded = Benchmark.Configuration(
        metrics: [.mallocCountTotal],
        warmupIterations: 2,
        scalingFactor: .kilo,
        maxDuration: .seconds(5),
        maxIterations: 30,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 10.0], absolute: [.p90: 500])]
    )
    for bunchSize in [1, 64] {
        Benchmark("Relay-allocations-per-operation-bunch-\(bunchSize)", configuration: guarded) { benchmark in
            try await DataPoint.with(storage: .volatile, configuration: .init(retention: .zero)) { point in
                point.register(Executor(), for: "noop")
                try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: bunchSize))
                let count = benchmark.scaledIterations.count
                try await run((0..<count).map { _ in CallOperation(kind: "noop") }, on: point)
                let operations = (0..<count).map { _ in CallOperation(kind: "noop") }
                benchmark.startMeasurement()
                try await run(operations, on: point)
                benchmark.stopMeasurement()
            }
        }
    }
}

private struct Executor: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome { .completed(Data()) }
}

private func run(_ operations: [CallOperation], on point: DataPoint) async throws {
    for handle in try await point.enqueue(operations) {
        guard case .completed = try await handle.outcome else { fatalError("operation \(handle.id) did not complete") }
    }
}
