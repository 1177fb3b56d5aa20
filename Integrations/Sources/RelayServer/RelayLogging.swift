import Logging
import Relay

/// Logs Relay's operations with swift-log, with the metadata `relay.operation.id`, `relay.operation.kind`,
/// `relay.sequence` and `relay.attempt`.
///
/// Enqueues and claims log at `trace`, attempts that complete or skip at `debug`, attempts that ask for a retry,
/// find their destination offline or throw at `warning`, and finished operations at `info`, or `error` when they
/// failed. Payloads and results are never logged.
///
/// ```swift
/// var configuration = DataPoint.Configuration()
/// configuration.observers = [RelayLogging(logger: Logger(label: "relay"))]
/// ```
public struct RelayLogging: CallObserver {
    private let logger: Logger

    /// Creates the observer.
    ///
    /// - Parameter logger: Where the records go; its own metadata comes with each.
    public init(logger: Logger) {
        self.logger = logger
    }

    /// The operation's metadata; called only for a record the logger's level lets through, since the id's text alone
    /// costs more than the rest of an attempt's observation.
    private static func metadata(
        _ operation: CallOperation, attempt: Int? = nil, status: Int? = nil
    ) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "relay.operation.id": "\(operation.id.uuidString.lowercased())",
            "relay.operation.kind": "\(operation.kind.rawValue)",
            "relay.sequence": "\(operation.sequenceName.rawValue)",
        ]
        if let attempt { metadata["relay.attempt"] = "\(attempt)" }
        if let status { metadata["http.response.status_code"] = "\(status)" }
        return metadata
    }

    /// Logs each new operation at `trace`.
    public func enqueued(_ operations: [CallOperation]) {
        guard logger.logLevel <= .trace else { return }
        for operation in operations {
            logger.trace("enqueued", metadata: Self.metadata(operation))
        }
    }

    /// Logs the claim at `trace`.
    public func claimed(_ operation: CallOperation, attempt: Int) {
        logger.trace("claimed", metadata: Self.metadata(operation, attempt: attempt))
    }

    /// Logs the attempt's end: `debug` when it completed or skipped, `warning` otherwise.
    public func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {
        let level: Logger.Level =
            switch ending.outcome {
            case .completed?, .skipped?: .debug
            default: .warning
            }
        logger.log(
            level: level, "attempt ended: \(ending)",
            metadata: Self.metadata(operation, attempt: number, status: ending.httpStatus))
    }

    /// Logs the operation's end: `info`, or `error` when it failed.
    public func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
        let level: Logger.Level = if case .failed = result { .error } else { .info }
        logger.log(level: level, "finished: \(result)", metadata: Self.metadata(operation, attempt: metrics.attempts))
    }
}
