import Benchmark

/// Runs `body` in a task of high priority, which the tasks it creates inherit, and returns what it returns.
///
/// package-benchmark's runner is itself async and waits for an async benchmark by blocking its own thread, one of the
/// global executor's. On Linux that executor keeps a pool of threads per priority, as many as the host has cores, so
/// on a two-core host a benchmark in the runner's default-priority pool gets one thread. The high-priority pool has
/// every thread free: Relay and its Swift baselines alike run on all the cores the goals name.
///
/// Cancelling the calling task cancels the one that runs `body`.
public func onEveryCore<Result: Sendable>(
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let task = Task(priority: .high, operation: body)
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}

/// Units per second of a benchmark's measured part, timed inside the task that ran it.
public let operationsPerSecond = BenchmarkMetric.custom(
    "operationsPerSecond", polarity: .prefersLarger, useScalingFactor: false)

extension Benchmark {
    /// Runs `body` on every core (see ``onEveryCore(_:)``) and records `count` over the time it returns, the time its
    /// measured part took, as ``operationsPerSecond``.
    public func measureRate(count: Int, _ body: @escaping @Sendable () async throws -> Duration) async throws {
        let time = try await onEveryCore(body)
        measurement(operationsPerSecond, Int((Double(count) / time.seconds).rounded()))
    }
}
