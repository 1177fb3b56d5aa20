import Benchmark
import Foundation
import Measuring
import Relay

/// Acknowledgement latency under steady load: durable enqueues arrive at a fixed rate, as a server's requests do,
/// whatever the store is doing, each enqueueing one operation; its latency runs from its arrival to `enqueue`
/// returning (its commit durable under `fsync: .always`), while the operations run and finish.
///
/// The file store compacts every 4 MiB of journal, so the run spans at least three compactions of a store that keeps
/// its outcomes at the default retention; beside it, the same load on a store that never compacts in the run. Each
/// side records its p99 in microseconds.
func acknowledgementBenchmark() {
    let rate = 4_000
    let count = 96_000
    let compacting = BenchmarkMetric.custom("ackP99Microseconds", polarity: .prefersSmaller, useScalingFactor: false)
    let steady = BenchmarkMetric.custom(
        "noCompactionAckP99Microseconds", polarity: .prefersSmaller, useScalingFactor: false)
    let compactions = BenchmarkMetric.custom("compactions", polarity: .prefersLarger, useScalingFactor: false)
    let configuration = Benchmark.Configuration(
        metrics: [compacting, steady, compactions], warmupIterations: 0, maxDuration: .seconds(120), maxIterations: 1)
    Benchmark("Ack Relay file store p99 across compactions n=\(count)", configuration: configuration) { benchmark in
        let (withCompactions, ran) = try await acknowledgementP99(count: count, rate: rate, threshold: 4 << 20)
        guard ran >= 3 else { fatalError("only \(ran) compactions ran; the benchmark needs three") }
        let (without, _) = try await acknowledgementP99(count: count, rate: rate, threshold: 1 << 40)
        benchmark.measurement(compacting, withCompactions)
        benchmark.measurement(steady, without)
        benchmark.measurement(compactions, ran)
    }
}

/// The p99 of `count` durable enqueues arriving at `rate` per second, in microseconds, and how many compactions the
/// store ran while they did.
private func acknowledgementP99(count: Int, rate: Int, threshold: Int) async throws -> (Int, Int) {
    let folder = temporaryStoreFolder("ack")
    defer { try? FileManager.default.removeItem(at: folder) }
    let storage = FileStorage(at: folder, options: FileStorage.Options(compactionThreshold: threshold))
    let (latencies, compactions) = try await DataPoint.with(storage: storage) { point in
        point.register(NoWorkExecutor(), for: noop)
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 64))
        let clock = ContinuousClock()
        let start = clock.now
        let gap = Duration.seconds(1) / rate
        let latencies = try await withThrowingTaskGroup(of: Duration.self) { group in
            // Arrivals come a millisecond's worth at a time, each timed from when it was due.
            let perTick = max(1, rate / 1000)
            for tick in 0..<(count / perTick) {
                let due = start + gap * (tick * perTick)
                try await clock.sleep(until: due)
                for _ in 0..<perTick {
                    group.addTask {
                        try await point.enqueue(CallOperation(kind: noop))
                        return clock.now - due
                    }
                }
            }
            return try await group.reduce(into: [Duration]()) { $0.append($1) }
        }
        // Before the close, which compacts once more.
        return (latencies, storage.compactionCount)
    }
    let sorted = latencies.sorted()
    let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
    return (Int(p99.seconds * 1e6), compactions)
}
