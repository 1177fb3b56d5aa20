import Metrics
import Relay
import Synchronization

/// Counts and times Relay's operations with swift-metrics.
///
/// Each metric has the dimensions `kind` and `sequence`:
///
/// - `relay_operations_enqueued_total`: operations enqueued;
/// - `relay_attempts_total`, with `ending` (`completed`, `skipped`, `retry`, `failed`, `offline` or `threw`): attempts;
/// - `relay_attempts_in_flight`: attempts running now, a meter;
/// - `relay_operations_finished_total`, with `outcome` (`completed`, `skipped`, `failed` or `cancelled`): operations
///   that ended;
/// - `relay_operation_queue_duration` and `relay_operation_run_duration`: timers of how long each finished operation
///   waited before its first attempt and how long its attempts ran.
///
/// ```swift
/// var configuration = DataPoint.Configuration()
/// configuration.observers = [RelayMetrics()]
/// ```
public struct RelayMetrics: CallObserver {
    private let handles: MetricHandles

    /// Creates the observer.
    ///
    /// - Parameter factory: The metrics backend; the bootstrapped one by default.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        handles = MetricHandles(factory: factory)
    }

    /// Counts each new operation.
    public func enqueued(_ operations: [CallOperation]) {
        // A commit's operations mostly share their kind and sequence: one increment per run of them.
        var index = operations.startIndex
        while index < operations.endIndex {
            let first = operations[index]
            var end = index + 1
            while end < operations.endIndex, operations[end].kind == first.kind,
                operations[end].sequenceName == first.sequenceName
            {
                end += 1
            }
            handles.of(first).enqueued.increment(by: end - index)
            index = end
        }
    }

    /// Counts the attempt in flight while it runs.
    public func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result {
        let inFlight = handles.of(operation).inFlight
        inFlight.increment()
        defer { inFlight.decrement() }
        return await body()
    }

    /// Counts the attempt by how it ended.
    public func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {
        let handles = handles.of(operation)
        switch ending.outcome {
        case .completed?: handles.attemptsCompleted.increment()
        case .skipped?: handles.attemptsSkipped.increment()
        case .retry?: handles.attemptsRetried.increment()
        case .failed?: handles.attemptsFailed.increment()
        case .offline?: handles.attemptsOffline.increment()
        case nil: handles.attemptsThrew.increment()
        }
    }

    /// Counts the operation by its outcome, and records how long it waited and ran.
    public func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
        let handles = handles.of(operation)
        switch result {
        case .completed: handles.finishedCompleted.increment()
        case .skipped: handles.finishedSkipped.increment()
        case .failed: handles.finishedFailed.increment()
        case .cancelled: handles.finishedCancelled.increment()
        }
        if let wait = metrics.queueWait { handles.queueDuration.record(duration: wait) }
        handles.runDuration.record(duration: metrics.runTime)
    }
}

/// The metrics of each kind and sequence, made once each: a backend may look a metric up by its label and dimensions
/// under a lock, and making them again for every event would pay for that each time.
private final class MetricHandles: Sendable {
    struct Key: Hashable {
        let kind: CallKind
        let sequence: CallSequence.Name
    }

    /// One kind's metrics in one sequence.
    struct Handles: Sendable {
        let enqueued: Counter
        let inFlight: Meter
        let attemptsCompleted, attemptsSkipped, attemptsRetried, attemptsFailed, attemptsOffline, attemptsThrew: Counter
        let finishedCompleted, finishedSkipped, finishedFailed, finishedCancelled: Counter
        let queueDuration, runDuration: Timer

        init(_ key: Key, factory: any MetricsFactory) {
            let dimensions = [("kind", key.kind.rawValue), ("sequence", key.sequence.rawValue)]
            func counter(_ label: String, _ extra: (String, String)? = nil) -> Counter {
                Counter(label: label, dimensions: dimensions + (extra.map { [$0] } ?? []), factory: factory)
            }
            enqueued = counter("relay_operations_enqueued_total")
            inFlight = Meter(label: "relay_attempts_in_flight", dimensions: dimensions, factory: factory)
            attemptsCompleted = counter("relay_attempts_total", ("ending", "completed"))
            attemptsSkipped = counter("relay_attempts_total", ("ending", "skipped"))
            attemptsRetried = counter("relay_attempts_total", ("ending", "retry"))
            attemptsFailed = counter("relay_attempts_total", ("ending", "failed"))
            attemptsOffline = counter("relay_attempts_total", ("ending", "offline"))
            attemptsThrew = counter("relay_attempts_total", ("ending", "threw"))
            finishedCompleted = counter("relay_operations_finished_total", ("outcome", "completed"))
            finishedSkipped = counter("relay_operations_finished_total", ("outcome", "skipped"))
            finishedFailed = counter("relay_operations_finished_total", ("outcome", "failed"))
            finishedCancelled = counter("relay_operations_finished_total", ("outcome", "cancelled"))
            queueDuration = Timer(label: "relay_operation_queue_duration", dimensions: dimensions, factory: factory)
            runDuration = Timer(label: "relay_operation_run_duration", dimensions: dimensions, factory: factory)
        }
    }

    private let factory: any MetricsFactory
    private let made = Mutex<[Key: Handles]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// The metrics of the operation's kind and sequence.
    func of(_ operation: CallOperation) -> Handles {
        let key = Key(kind: operation.kind, sequence: operation.sequenceName)
        if let handles = made.withLock({ $0[key] }) { return handles }
        let handles = Handles(key, factory: factory)
        return made.withLock { made in
            if let earlier = made[key] { return earlier }
            made[key] = handles
            return handles
        }
    }
}
