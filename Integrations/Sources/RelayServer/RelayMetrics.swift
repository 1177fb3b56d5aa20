import Metrics
import Relay

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
    private let factory: any MetricsFactory

    /// Creates the observer.
    ///
    /// - Parameter factory: The metrics backend; the bootstrapped one by default.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    private static func dimensions(_ operation: CallOperation) -> [(String, String)] {
        [("kind", operation.kind.rawValue), ("sequence", operation.sequenceName.rawValue)]
    }

    /// Counts each new operation.
    public func enqueued(_ operations: [CallOperation]) {
        for operation in operations {
            Counter(
                label: "relay_operations_enqueued_total", dimensions: Self.dimensions(operation), factory: factory
            ).increment()
        }
    }

    /// Counts the attempt in flight while it runs.
    public func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result {
        let inFlight = Meter(
            label: "relay_attempts_in_flight", dimensions: Self.dimensions(operation), factory: factory)
        inFlight.increment()
        defer { inFlight.decrement() }
        return await body()
    }

    /// Counts the attempt by how it ended.
    public func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {
        let name =
            switch ending.outcome {
            case .completed?: "completed"
            case .skipped?: "skipped"
            case .retry?: "retry"
            case .failed?: "failed"
            case .offline?: "offline"
            case nil: "threw"
            }
        Counter(
            label: "relay_attempts_total", dimensions: Self.dimensions(operation) + [("ending", name)], factory: factory
        ).increment()
    }

    /// Counts the operation by its outcome, and times its queue wait and run time.
    public func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
        let dimensions = Self.dimensions(operation)
        let outcome =
            switch result {
            case .completed: "completed"
            case .skipped: "skipped"
            case .failed: "failed"
            case .cancelled: "cancelled"
            }
        Counter(
            label: "relay_operations_finished_total", dimensions: dimensions + [("outcome", outcome)], factory: factory
        ).increment()
        if let wait = metrics.queueWait {
            Timer(label: "relay_operation_queue_duration", dimensions: dimensions, factory: factory)
                .record(duration: wait)
        }
        Timer(label: "relay_operation_run_duration", dimensions: dimensions, factory: factory)
            .record(duration: metrics.runTime)
    }
}
