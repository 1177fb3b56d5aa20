import Benchmark
import Foundation
import Measuring
import Relay

#if canImport(Glibc)
    /// Soak: a million operations through a file store with the default configuration (an hour's retention), beside
    /// the same run with a retention of zero, which keeps no outcome at all.
    ///
    /// Resident memory is sampled every 50,000 operations; after the warm-up, a flat line is the goal. The warm-up is
    /// the first 650,000 operations: the retained outcomes fill up to their bound, and the journal reaches the default
    /// compaction threshold (64 MiB, about 580,000 operations here), whose first fold sets the heap's high-water mark.
    /// Each side records the slope of the samples after it, in KB per 100,000 operations, and its peak in MB.
    func soakBenchmark() {
        let count = 1_000_000
        let metrics = ["relaySlopeKBPer100k", "zeroRetentionSlopeKBPer100k", "relayPeakMB", "zeroRetentionPeakMB"]
            .map { BenchmarkMetric.custom($0, polarity: .prefersSmaller, useScalingFactor: false) }
        let configuration = Benchmark.Configuration(
            metrics: metrics, warmupIterations: 0, maxDuration: .seconds(300), maxIterations: 1)
        Benchmark("Soak Relay file store default retention n=\(count)", configuration: configuration) { benchmark in
            let retained = try await soak(count, configuration: DataPoint.Configuration())
            let zero = try await soak(count, configuration: DataPoint.Configuration(retention: .zero))
            // A histogram holds no negative values: a falling line records as flat.
            benchmark.measurement(metrics[0], max(0, Int(retained.slope / 1000)))
            benchmark.measurement(metrics[1], max(0, Int(zero.slope / 1000)))
            benchmark.measurement(metrics[2], retained.peak / 1_000_000)
            benchmark.measurement(metrics[3], zero.peak / 1_000_000)
        }
    }

    /// Runs `count` operations through a new file store, in commits of 1,000 with every outcome awaited, and returns
    /// the slope of resident memory after the warm-up, in bytes per 100,000 operations, and the highest sample.
    private func soak(_ count: Int, configuration: DataPoint.Configuration) async throws -> (slope: Double, peak: Int) {
        let folder = temporaryStoreFolder("soak")
        defer { try? FileManager.default.removeItem(at: folder) }
        let every = 50_000
        ResidentMemory.returnFreeMemory()
        var samples: [(operations: Double, bytes: Double)] = []
        try await DataPoint.with(storage: .file(at: folder), configuration: configuration) { point in
            point.register(NoWorkExecutor(), for: noop)
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 64))
            for done in stride(from: every, through: count, by: every) {
                try await enqueueAndAwait(commits(independentOperations(every)), on: point)
                samples.append((Double(done), Double(ResidentMemory.current())))
            }
        }
        let late = samples.filter { $0.operations > 650_000 }
        let meanX = late.map(\.operations).reduce(0, +) / Double(late.count)
        let meanY = late.map(\.bytes).reduce(0, +) / Double(late.count)
        let covariance = late.map { ($0.operations - meanX) * ($0.bytes - meanY) }.reduce(0, +)
        let variance = late.map { ($0.operations - meanX) * ($0.operations - meanX) }.reduce(0, +)
        return (covariance / variance * 100_000, Int(samples.map(\.bytes).max() ?? 0))
    }
#else
    func soakBenchmark() {}
#endif
