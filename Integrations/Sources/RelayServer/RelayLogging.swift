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

    private static func metadata(_ operation: CallOperation, attempt: Int? = nil) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "relay.operation.id": "\(operation.id.uuidString.lowercased())",
            "relay.operation.kind": "\(operation.kind.rawValue)",
            "relay.sequence": "\(operation.sequenceName.rawValue)",
        ]
        if let attempt { metadata["relay.attempt"] = "\(attempt)" }
        return metadata
    }

    /// Logs each new operation at `trace`.
    public func enqueued(_ operations: [CallOperation]) {
        for operation in operations {
            logger.trace("enqueued", metadata: Self.metadata(operation))
        }
    }

    /// Logs the claim at `trace`.
    public func claimed(_ operation: CallOperation, attempt: Int) {
        logger.trace("claimed", metadata: Self.metadata(operation, attempt: attempt))
    }

    /// Logs the attempt's end: at `debug` when it completed or skipped, at `warning` otherwise.
    public func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {
        var metadata = Self.metadata(operation, attempt: number)
        if let status = ending.httpStatus { metadata["http.response.status_code"] = "\(status)" }
        switch ending.outcome {
        case .completed?, .skipped?:
            logger.debug("attempt ended: \(ending)", metadata: metadata)
        default:
            logger.warning("attempt ended: \(ending)", metadata: metadata)
        }
    }

    /// Logs the operation's end: at `error` when it failed, at `info` otherwise.
    public func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
        let metadata = Self.metadata(operation, attempt: metrics.attempts)
        if case .failed = result {
            logger.error("finished: \(result)", metadata: metadata)
        } else {
            logger.info("finished: \(result)", metadata: metadata)
        }
    }
}
