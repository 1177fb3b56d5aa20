import Benchmark

/// Two workloads measured in one iteration, in the order first, second, second, first.
///
/// The host's speed drifts by more than some goals' margins over the seconds a benchmark takes, so two separate
/// benchmarks would compare two different machines. Interleaving both sides in every iteration makes a drift that is
/// steady over the iteration weigh on both alike; the goal then reads the median of the iterations' ratios.
public struct PairedMeasurement: Sendable {
    /// Units per second of the first side.
    public let firstRate: BenchmarkMetric
    /// Units per second of the second side.
    public let secondRate: BenchmarkMetric
    /// The first side's rate per thousand of the second's, in the same iteration.
    public let ratio: BenchmarkMetric

    /// Names the three metrics.
    ///
    /// - Parameters:
    ///   - first: The first side's rate metric name.
    ///   - second: The second side's rate metric name.
    ///   - ratio: The ratio metric name.
    ///   - ratioPolarity: Whether a larger ratio is better.
    public init(first: String, second: String, ratio: String, ratioPolarity: BenchmarkMetric.Polarity) {
        firstRate = .custom(first, polarity: .prefersLarger, useScalingFactor: false)
        secondRate = .custom(second, polarity: .prefersLarger, useScalingFactor: false)
        self.ratio = .custom(ratio, polarity: ratioPolarity, useScalingFactor: false)
    }

    /// The metrics to declare in the benchmark's configuration.
    public var metrics: [BenchmarkMetric] { [firstRate, secondRate, ratio] }

    /// Runs both sides twice, first, second, second, first, and returns each side's total time.
    ///
    /// - Parameters:
    ///   - first: Runs the first side once and returns the time its measured part took; preparation outside it is
    ///     not counted.
    ///   - second: The same for the second side.
    /// - Returns: Each side's time over its two runs.
    public static func alternate(
        first: () async throws -> Duration,
        second: () async throws -> Duration
    ) async rethrows -> Times {
        var times = Times()
        for firstTurn in [true, false, false, true] {
            if firstTurn { times.first += try await first() } else { times.second += try await second() }
        }
        return times
    }

    /// The time each side took over its two runs.
    public struct Times: Sendable {
        /// The first side's time.
        public var first = Duration.zero
        /// The second side's time.
        public var second = Duration.zero
    }

    /// Records both sides' rates and their ratio, from the times of ``alternate(first:second:)``.
    ///
    /// - Parameters:
    ///   - times: Both sides' times over their two runs.
    ///   - count: Units each run of a side handles.
    ///   - benchmark: The running benchmark.
    public func record(_ times: Times, count: Int, in benchmark: Benchmark) {
        let firstPerSecond = Double(2 * count) / times.first.seconds
        let secondPerSecond = Double(2 * count) / times.second.seconds
        benchmark.measurement(firstRate, Int(firstPerSecond))
        benchmark.measurement(secondRate, Int(secondPerSecond))
        benchmark.measurement(ratio, Int(1000 * firstPerSecond / secondPerSecond))
    }
}

extension Duration {
    /// The duration in seconds.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Times one run of `body` on the continuous clock.
public func timed(_ body: () async throws -> Void) async rethrows -> Duration {
    let clock = ContinuousClock()
    let started = clock.now
    try await body()
    return clock.now - started
}
