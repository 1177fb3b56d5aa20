/// The most recent duration samples, kept in a ring so that recording is O(1) and memory is bounded.
struct LatencyWindow: Sendable {
    private var samples: [Int64]
    private var next = 0
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        samples = []
        samples.reserveCapacity(min(self.capacity, 1024))
    }

    mutating func record(_ nanoseconds: Int64) {
        if samples.count < capacity {
            samples.append(nanoseconds)
        } else {
            samples[next] = nanoseconds
            next = next + 1 == capacity ? 0 : next + 1
        }
    }

    /// Nearest-rank percentiles: the p-th percentile is the smallest sample with at least p% of samples ≤ it.
    func percentiles() -> MetricsSnapshot.Percentiles {
        guard !samples.isEmpty else { return .empty }
        let sorted = samples.sorted()
        func rank(_ percent: Int) -> Duration {
            let index = (percent * sorted.count + 99) / 100 - 1
            return .nanoseconds(sorted[min(max(index, 0), sorted.count - 1)])
        }
        return .init(p50: rank(50), p90: rank(90), p99: rank(99), samples: sorted.count)
    }
}
