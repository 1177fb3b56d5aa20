/// Counts and latency percentiles of a DataPoint at one moment, from ``DataPoint/metrics()``.
///
/// Counts of terminal states are totals since the DataPoint opened. Percentiles cover the most recent finished
/// operations, up to ``DataPoint/Configuration/metricsWindow`` of them, using the nearest-rank method.
public struct MetricsSnapshot: Sendable, Hashable {
    /// Operation counts of one sequence.
    public struct Counts: Sendable, Hashable {
        /// Operations waiting to start: for dependencies, holds, retries, suspension or a free slot.
        public var pending = 0
        /// Operations whose attempt is running.
        public var running = 0
        /// Operations that finished `completed`.
        public var completed = 0
        /// Operations that finished `skipped`.
        public var skipped = 0
        /// Operations that finished `failed`.
        public var failed = 0
        /// Operations that finished `cancelled`.
        public var cancelled = 0
        /// Pending operations that wait for an offline destination to answer its probe.
        public var offline = 0

        /// Creates counts, all zero.
        public init() {}

        mutating func countFinished(_ result: CallResult) {
            switch result {
            case .completed: completed += 1
            case .skipped: skipped += 1
            case .failed: failed += 1
            case .cancelled: cancelled += 1
            }
        }
    }

    /// The 50th, 90th and 99th percentiles of a duration.
    public struct Percentiles: Sendable, Hashable {
        /// The median.
        public var p50: Duration
        /// The 90th percentile.
        public var p90: Duration
        /// The 99th percentile.
        public var p99: Duration
        /// How many samples the percentiles cover.
        public var samples: Int

        /// Creates percentiles.
        ///
        /// - Parameters:
        ///   - p50: The median.
        ///   - p90: The 90th percentile.
        ///   - p99: The 99th percentile.
        ///   - samples: How many samples they cover.
        public init(p50: Duration, p90: Duration, p99: Duration, samples: Int) {
            self.p50 = p50
            self.p90 = p90
            self.p99 = p99
            self.samples = samples
        }

        /// Percentiles of no samples.
        public static let empty = Percentiles(p50: .zero, p90: .zero, p99: .zero, samples: 0)
    }

    /// Counts per sequence.
    public var sequences: [CallSequence.Name: Counts]
    /// Operations running right now, across sequences.
    public var running: Int
    /// Time from enqueue to first start.
    public var queueWait: Percentiles
    /// Time spent in executors, summed over attempts.
    public var runTime: Percentiles
    /// Events dropped across all subscribers because their buffers were full.
    public var droppedEvents: Int

    /// Creates a snapshot, as a store that several processes share reports the whole fleet's.
    ///
    /// - Parameters:
    ///   - sequences: Counts per sequence.
    ///   - running: Operations running right now.
    ///   - queueWait: Time from enqueue to first start.
    ///   - runTime: Time spent in executors, summed over attempts.
    ///   - droppedEvents: Events dropped because subscribers' buffers were full.
    public init(
        sequences: [CallSequence.Name: Counts], running: Int, queueWait: Percentiles, runTime: Percentiles,
        droppedEvents: Int = 0
    ) {
        self.sequences = sequences
        self.running = running
        self.queueWait = queueWait
        self.runTime = runTime
        self.droppedEvents = droppedEvents
    }

    /// Counts summed over every sequence.
    public var total: Counts {
        sequences.values.reduce(into: Counts()) { sum, counts in
            sum.pending += counts.pending
            sum.running += counts.running
            sum.completed += counts.completed
            sum.skipped += counts.skipped
            sum.failed += counts.failed
            sum.cancelled += counts.cancelled
            sum.offline += counts.offline
        }
    }
}

extension MetricsSnapshot: CustomStringConvertible {
    /// Totals, latency percentiles and dropped events, then each sequence's counts.
    public var description: String {
        var text = "\(total); queue wait \(queueWait); run time \(runTime); \(droppedEvents) dropped events"
        for name in sequences.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            text += "\n  \(name): \(sequences[name] ?? Counts())"
        }
        return text
    }
}

extension MetricsSnapshot.Counts: CustomStringConvertible {
    /// `2 pending, 1 running, 40 completed, 0 skipped, 1 failed, 0 cancelled`.
    public var description: String {
        "\(pending) pending" + (offline > 0 ? " (\(offline) offline)" : "")
            + ", \(running) running, \(completed) completed, \(skipped) skipped, \(failed) failed, \(cancelled) cancelled"
    }
}

extension MetricsSnapshot.Percentiles: CustomStringConvertible {
    /// `p50 1.2 ms, p90 3 ms, p99 5.1 ms over 1000 samples`, or `no samples`.
    public var description: String {
        guard samples > 0 else { return "no samples" }
        return "p50 \(p50.readable), p90 \(p90.readable), p99 \(p99.readable) over \(samples.counted("sample"))"
    }
}
