/// Periodic metrics snapshots, from ``DataPoint/metrics(every:)``.
///
/// The iterating task sleeps on the DataPoint's clock between snapshots, so a manual clock drives it in tests.
public struct MetricsStream: AsyncSequence, Sendable {
    /// One snapshot.
    public typealias Element = MetricsSnapshot
    /// Iteration never throws; cancellation of the iterating task ends it.
    public typealias Failure = Never

    let core: PipelineCore
    let interval: Duration

    /// Creates the iterator.
    ///
    /// - Returns: An iterator whose first snapshot comes one interval from now.
    public func makeAsyncIterator() -> Iterator {
        Iterator(core: core, interval: Swift.max(interval, .nanoseconds(1)).relayNanoseconds, next: nil)
    }

    /// Iterates periodic snapshots.
    public struct Iterator: AsyncIteratorProtocol {
        let core: PipelineCore
        let interval: Int64
        var next: Int64?

        /// The next snapshot, or `nil` once the DataPoint has begun to stop (at the first snapshot due after it) or the
        /// task is cancelled.
        ///
        /// - Returns: The next snapshot.
        public mutating func next() async -> MetricsSnapshot? {
            let deadline = (next ?? core.clock.now) + interval
            next = deadline
            do {
                try await core.clock.sleep(until: deadline)
            } catch {
                return nil
            }
            return core.read { machine in
                switch machine.lifecycle {
                case .stopping, .stopped: nil
                case .idle, .running: machine.metricsSnapshot(droppedEvents: core.events.droppedEvents)
                }
            }
        }
    }
}
