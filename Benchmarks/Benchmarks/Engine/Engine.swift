import Benchmark
import Foundation
import Measuring
import Relay

/// Runs Relay's engine against its baselines, in the same run.
///
/// Names carry the operation count per iteration. Workloads run on every core (see `onEveryCore`) and record their
/// rate as `operationsPerSecond`, timed inside their task; `compare.sh` reads the medians.
let benchmarks: @Sendable () -> Void = {
    let timing: [BenchmarkMetric] = [operationsPerSecond]
    func configuration(iterations: Int, metrics: [BenchmarkMetric] = timing) -> Benchmark.Configuration {
        .init(metrics: metrics, warmupIterations: 1, maxDuration: .seconds(20), maxIterations: iterations)
    }
    // A million pending operations per iteration: with a scaling factor of one million, metrics read per operation.
    func perMillionOperations(warmup: Int, seconds: Int64, iterations: Int) -> Benchmark.Configuration {
        .init(
            metrics: [.wallClock, .memoryLeakedBytes],
            warmupIterations: warmup,
            scalingFactor: .mega,
            maxDuration: .seconds(seconds),
            maxIterations: iterations
        )
    }

    // P1: throughput at bunch 64 (and 5) against a raw task group of the same width, paired in each iteration (see
    // PairedMeasurement), and against OperationQueue.
    let againstTaskGroup = PairedMeasurement(
        first: "relayOperationsPerSecond",
        second: "taskGroupOperationsPerSecond",
        ratio: "relayPerMilleOfTaskGroup",
        ratioPolarity: .prefersLarger
    )
    for width in [64, 5] {
        let count = 100_000
        Benchmark(
            "P1 Relay bunch \(width) against TaskGroup width \(width) n=\(count)",
            configuration: configuration(iterations: 15, metrics: againstTaskGroup.metrics)
        ) { benchmark in
            let times = try await onEveryCore {
                try await withPoint(bunchSize: width) { point in
                    try await enqueueAndAwait(commits(independentOperations(count)), on: point)
                    return try await PairedMeasurement.alternate {
                        let measured = commits(independentOperations(count))
                        return try await timed { try await enqueueAndAwait(measured, on: point) }
                    } second: {
                        await timed { await taskGroupBaseline(count, width: width) }
                    }
                }
            }
            againstTaskGroup.record(times, count: count, in: benchmark)
        }
        Benchmark("P1 OperationQueue width \(width) n=\(count)", configuration: configuration(iterations: 5)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                let operations = blockOperations(count)
                return await timed { await run(operations, width: width) }
            }
        }
    }

    // Context for P1: its round with the commits timed while the DataPoint is suspended, then the run and the awaits,
    // so that the two sides of the cost per operation read apart.
    let commitCost = BenchmarkMetric.custom(
        "commitNanosecondsPerOperation", polarity: .prefersSmaller, useScalingFactor: false)
    let runCost = BenchmarkMetric.custom(
        "runNanosecondsPerOperation", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "P1 Relay commit and run apart n=100000",
        configuration: configuration(iterations: 15, metrics: [commitCost, runCost])
    ) { benchmark in
        let count = 100_000
        let (commit, run) = try await onEveryCore {
            try await withPoint(bunchSize: 64) { point in
                try await enqueueAndAwait(commits(independentOperations(count)), on: point)
                let measured = commits(independentOperations(count))
                try await point.suspend()
                var handles: [[CallHandle]] = []
                let commit = try await timed { handles = try await enqueue(measured, on: point) }
                let run = try await timed {
                    try await point.resume()
                    try await awaitCompletion(of: handles)
                }
                return (commit, run)
            }
        }
        benchmark.measurement(commitCost, Int(commit.seconds * 1e9 / Double(count)))
        benchmark.measurement(runCost, Int(run.seconds * 1e9 / Double(count)))
    }

    // P2: a dependency chain against the same number of independent operations, at bunch 1, paired in each
    // iteration (see PairedMeasurement): the goal bounds the ratio of per-operation costs, which is the ratio of the
    // independent rate to the chain's.
    let chainCost = PairedMeasurement(
        first: "independentOperationsPerSecond",
        second: "chainOperationsPerSecond",
        ratio: "chainCostPerMilleOfIndependent",
        ratioPolarity: .prefersSmaller
    )
    for count in [1_000, 10_000, 100_000] {
        let iterations = count == 100_000 ? 7 : 20
        Benchmark(
            "P2 Relay chain against independent n=\(count)",
            configuration: configuration(iterations: iterations, metrics: chainCost.metrics)
        ) { benchmark in
            let times = try await onEveryCore {
                try await withPoint(bunchSize: 1) { point in
                    // One unmeasured round of each shape first, as a long-running service's DataPoint would have had.
                    try await enqueueAndAwait([chain(count)], on: point)
                    try await enqueueAndAwait([independentOperations(count)], on: point)
                    return try await PairedMeasurement.alternate {
                        let measured = [independentOperations(count)]
                        return try await timed { try await enqueueAndAwait(measured, on: point) }
                    } second: {
                        let measured = [chain(count)]
                        return try await timed { try await enqueueAndAwait(measured, on: point) }
                    }
                }
            }
            chainCost.record(times, count: count, in: benchmark)
        }
    }
    for count in [1_000, 5_000] {
        Benchmark("P2 OperationQueue chain n=\(count)", configuration: configuration(iterations: 5)) { benchmark in
            try await benchmark.measureRate(count: count) {
                let operations = blockOperations(count, chained: true)
                return await timed { await run(operations, width: 1) }
            }
        }
        Benchmark("P2 OperationQueue independent n=\(count)", configuration: configuration(iterations: 5)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                let operations = blockOperations(count)
                return await timed { await run(operations, width: 1) }
            }
        }
    }

    // P3: bunch 1 against a raw task group at width 1.
    do {
        let count = 100_000
        Benchmark("P3 Relay bunch 1 n=\(count)", configuration: configuration(iterations: 15)) { benchmark in
            try await benchmark.measureRate(count: count) {
                try await timedWarmRound(bunchSize: 1) { independentOperations(count) }
            }
        }
        Benchmark("P3 TaskGroup width 1 n=\(count)", configuration: configuration(iterations: 15)) { benchmark in
            try await benchmark.measureRate(count: count) { await timed { await taskGroupBaseline(count, width: 1) } }
        }
    }

    // P7: events delivered to one subscriber, against an AsyncStream delivering one element per yield. Cancelling
    // the root of a waiting fan-out cancels its 9,999 dependents in one transition, so the engine produces events as
    // fast as it can; the measured rate is their delivery, from the first cancel to the subscriber's last event,
    // while a producer cancels thirty such roots one after another.
    do {
        let events = 300_000
        Benchmark("P7 Relay events n=\(events)", configuration: configuration(iterations: 15)) { benchmark in
            try await benchmark.measureRate(count: events) {
                try await withPoint(bunchSize: 64) { point in
                    try await point.suspend()
                    var roots: [UUID] = []
                    for _ in 0..<events / 10_000 {
                        let root = CallOperation(kind: noop)
                        let dependents = (1..<10_000).map { _ in CallOperation(kind: noop, dependencies: [root.id]) }
                        try await point.enqueue([root] + dependents)
                        roots.append(root.id)
                    }
                    let stream = point.events()
                    let cancellations = roots
                    return try await timed {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { for root in cancellations { try await point.cancel(root) } }
                            var received = 0
                            for await _ in stream {
                                received += 1
                                if received == events { break }
                            }
                            try await group.waitForAll()
                        }
                    }
                }
            }
        }
        Benchmark("P7 AsyncStream one per yield n=\(events)", configuration: configuration(iterations: 15)) {
            benchmark in
            try await benchmark.measureRate(count: events) { await timed { await asyncStreamBaseline(events) } }
        }
        // For reference: whole lives (enqueued, started, completed) delivered while 100,000 operations run.
        let operations = 100_000
        Benchmark("Events Relay lifecycle n=\(operations * 3)", configuration: configuration(iterations: 10)) {
            benchmark in
            try await benchmark.measureRate(count: operations * 3) {
                try await withPoint(bunchSize: 64) { point in
                    try await enqueueAndAwait(commits(independentOperations(operations)), on: point)
                    let batch = commits(independentOperations(operations))
                    let stream = point.events()
                    return try await timed {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { try await enqueueAndAwait(batch, on: point) }
                            var received = 0
                            for await _ in stream {
                                received += 1
                                if received == operations * 3 { break }
                            }
                            try await group.waitForAll()
                        }
                    }
                }
            }
        }
    }

    // P4: durable operations from enqueue to complete under group commit, against one fsync per operation.
    do {
        let count = 20_000
        Benchmark("P4 Relay file store group commit n=\(count)", configuration: configuration(iterations: 10)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                let folder = temporaryStoreFolder("p4")
                defer { try? FileManager.default.removeItem(at: folder) }
                return try await DataPoint.with(storage: .file(at: folder), configuration: benchmarkConfiguration) {
                    point in
                    point.register(NoWorkExecutor(), for: noop)
                    try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 64))
                    let operations = commits(independentOperations(count))
                    return try await timed { try await enqueueAndAwait(operations, on: point) }
                }
            }
        }
        let syncs = 2_000
        Benchmark("P4 one fsync per operation n=\(syncs)", configuration: configuration(iterations: 10)) { benchmark in
            try await benchmark.measureRate(count: syncs) {
                let folder = temporaryStoreFolder("p4-baseline")
                defer { try? FileManager.default.removeItem(at: folder) }
                return try await timed { try oneSyncPerOperation(syncs, in: folder) }
            }
        }
    }

    // P5: reopening a store that holds a million pending operations: time, and memory kept per operation. With a
    // scaling factor of one million, the net unfreed bytes read per operation.
    Benchmark(
        "P5 Relay reopen n=1000000",
        configuration: perMillionOperations(warmup: 1, seconds: 120, iterations: 5)
    ) { benchmark in
        let folder = try await storeWithPendingOperations(1_000_000)
        benchmark.startMeasurement()
        let point = try await DataPoint(storage: .file(at: folder), configuration: benchmarkConfiguration)
        benchmark.stopMeasurement()
        precondition(point.recoveryReport?.operationsRecovered == 1_000_000, "the store lost operations")
        try await point.shutdown()
    }

    // A DAG: one root, 10,000 children, one sink.
    do {
        let children = 10_000
        let count = children + 2
        Benchmark("DAG Relay fan-out fan-in n=\(count)", configuration: configuration(iterations: 20)) { benchmark in
            try await benchmark.measureRate(count: count) {
                try await timedWarmRound(bunchSize: 64, commitSize: count) { fanOutFanIn(children) }
            }
        }
        Benchmark("DAG TaskGroup fan-out fan-in n=\(count)", configuration: configuration(iterations: 20)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                await timed { await fanOutFanInTaskGroup(children, width: 64) }
            }
        }
        Benchmark("DAG OperationQueue fan-out fan-in n=\(count)", configuration: configuration(iterations: 5)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                let operations = fanOutFanInBlockOperations(children)
                return await timed { await run(operations, width: 64) }
            }
        }
    }

    // A mixed workload over the three default sequences, against a task group of their total width.
    do {
        let count = 30_000
        Benchmark("Mixed Relay three sequences n=\(count)", configuration: configuration(iterations: 15)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                try await timedWarmRound(
                    bunchSize: 8,
                    prepare: {
                        try await $0.upsertCallSequence(CallSequence(name: .downloads, bunchSize: 4))
                        try await $0.upsertCallSequence(CallSequence(name: .uploads, bunchSize: 4))
                    }
                ) { mixedOperations(count) }
            }
        }
        Benchmark("Mixed TaskGroup width 16 n=\(count)", configuration: configuration(iterations: 15)) { benchmark in
            try await benchmark.measureRate(count: count) { await timed { await taskGroupBaseline(count, width: 16) } }
        }
    }

    // Making operations: Relay's default identifiers against Foundation's `UUID()`, which on Linux reads the random
    // device with its own system calls for every identifier.
    do {
        let count = 100_000
        Benchmark("Ids Relay new operations n=\(count)", configuration: configuration(iterations: 15)) { benchmark in
            try await benchmark.measureRate(count: count) { await timed { blackHole(independentOperations(count)) } }
        }
        Benchmark("Ids Foundation UUID new operations n=\(count)", configuration: configuration(iterations: 15)) {
            benchmark in
            try await benchmark.measureRate(count: count) {
                await timed { blackHole((0..<count).map { _ in CallOperation(id: UUID(), kind: noop) }) }
            }
        }
    }

    // Allocations per operation: with a scaling factor of 1,000 and 1,000 operations per iteration, the scaled
    // malloc count reads per operation.
    let perOperation = Benchmark.Configuration(
        metrics: [.mallocCountTotal, .wallClock],
        warmupIterations: 2,
        scalingFactor: .kilo,
        maxDuration: .seconds(10),
        maxIterations: 50
    )
    Benchmark("Malloc Relay per operation bunch 64", configuration: perOperation) { benchmark in
        let count = benchmark.scaledIterations.count
        try await warmRound(bunchSize: 64) {
            independentOperations(count)
        } measure: { round in
            benchmark.startMeasurement()
            try await round()
            benchmark.stopMeasurement()
        }
    }
    Benchmark("Malloc TaskGroup per operation width 64", configuration: perOperation) { benchmark in
        await taskGroupBaseline(benchmark.scaledIterations.count, width: 64)
    }

    // Memory per pending operation: a million operations wait in a DataPoint that does not run. With a scaling
    // factor of one million, the net unfreed bytes read per operation.
    Benchmark(
        "Memory Relay bytes per pending operation n=1000000",
        configuration: perMillionOperations(warmup: 0, seconds: 60, iterations: 3)
    ) { benchmark in
        let point = try await DataPoint(storage: .volatile, configuration: benchmarkConfiguration)
        point.register(NoWorkExecutor(), for: noop)
        var handles: [CallHandle] = []
        benchmark.startMeasurement()
        for _ in 0..<100 {
            // The caller's operations are released after each commit; only the pipeline's copies remain.
            handles = try await point.enqueue(independentOperations(10_000))
        }
        benchmark.stopMeasurement()
        blackHole(handles)
        try await point.shutdown()
    }
    soakBenchmark()
    acknowledgementBenchmark()
}
