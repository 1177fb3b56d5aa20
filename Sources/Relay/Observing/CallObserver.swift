import Foundation

/// Watches what a DataPoint does with its operations, for logs, metrics and traces.
///
/// A DataPoint calls its observers (``DataPoint/Configuration/observers``, none by default) as an operation is
/// enqueued, claimed, attempted and finished. Every method has a default that does nothing, so an observer implements
/// what it needs. With no observer, the DataPoint builds nothing for them.
///
/// Hooks are called outside the DataPoint's locks, on the task that does the work: ``carrier(for:)`` in the enqueuing
/// task, ``attempt(_:number:_:)`` around each attempt in the worker's task. They must be quick and must not wait on
/// the DataPoint.
///
/// A trace or a logger's metadata reaches the attempts through the carrier: what ``carrier(for:)`` returns in the
/// enqueuing task is stored with the operation (``CallOperation/carrier``), survives a restart, and is there for
/// ``attempt(_:number:_:)`` to read, which can then run the attempt in the enqueuer's context, so that an executor,
/// and the HTTP requests it sends, see it.
///
/// ```swift
/// final class Counting: CallObserver {
///     let finishedCount = Mutex(0)
///
///     func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {
///         finishedCount.withLock { $0 += 1 }
///     }
/// }
/// ```
public protocol CallObserver: Sendable {
    /// What to store with an operation as it is enqueued, read in the enqueuing task: a trace context, say, under
    /// keys of the observer's choice. Nothing by default.
    ///
    /// - Parameter operation: The operation about to be committed.
    /// - Returns: Key-values to keep with it; see ``CallOperation/carrier``.
    func carrier(for operation: CallOperation) -> [String: String]

    /// Operations were enqueued: their commit is durable. Operations named again (S1) are not reported again.
    ///
    /// It is called in the enqueuing task once the commit is durable, when a worker may have claimed the operations
    /// already: the other hooks of an operation come in order, from its worker, and this one may come among them.
    ///
    /// - Parameter operations: The new operations, in commit order, with their snapshot number and carrier.
    func enqueued(_ operations: [CallOperation])

    /// A worker claimed an operation for an attempt, which starts next.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - attempt: The attempt's number, from 1.
    func claimed(_ operation: CallOperation, attempt: Int)

    /// Runs one attempt: call `body` once and return what it returns. The default just calls it; an observer may run
    /// it inside a span, or with a logger's metadata, restored from ``CallOperation/carrier``.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - number: The attempt's number, from 1.
    ///   - body: The attempt; it calls ``attemptEnded(_:number:ending:)`` before it returns.
    /// - Returns: What `body` returns.
    func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result

    /// An attempt ended, inside ``attempt(_:number:_:)``.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - number: The attempt's number.
    ///   - ending: How it ended.
    func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding)

    /// An operation reached its terminal state, and the transition that says so is durable.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - result: Its terminal state.
    ///   - metrics: Its metrics.
    func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics)
}

extension CallObserver {
    /// Nothing.
    public func carrier(for operation: CallOperation) -> [String: String] { [:] }

    /// Does nothing.
    public func enqueued(_ operations: [CallOperation]) {}

    /// Does nothing.
    public func claimed(_ operation: CallOperation, attempt: Int) {}

    /// Runs the attempt.
    public func attempt<Result: Sendable>(
        _ operation: CallOperation, number: Int, _ body: () async -> Result
    ) async -> Result {
        await body()
    }

    /// Does nothing.
    public func attemptEnded(_ operation: CallOperation, number: Int, ending: AttemptEnding) {}

    /// Does nothing.
    public func finished(_ operation: CallOperation, result: CallResult, metrics: CallMetrics) {}
}

/// How an attempt ended, as an observer sees it.
public struct AttemptEnding: Sendable, Hashable, CustomStringConvertible {
    /// What the executor returned; `nil` when it threw.
    public let outcome: CallOutcome?
    /// What the executor threw, described; `nil` when it returned.
    public let error: String?
    /// Whether the executor threw because its task was cancelled: by a cancel, or by a shutdown.
    public let interrupted: Bool
    /// The status of the response the attempt got, for an HTTP call that got one.
    public let httpStatus: Int?

    /// Creates an attempt's ending.
    ///
    /// - Parameters:
    ///   - outcome: What the executor returned.
    ///   - error: What it threw, described.
    ///   - interrupted: Whether it threw because its task was cancelled.
    ///   - httpStatus: The response's status.
    public init(outcome: CallOutcome?, error: String? = nil, interrupted: Bool = false, httpStatus: Int? = nil) {
        self.outcome = outcome
        self.error = error
        self.interrupted = interrupted
        self.httpStatus = httpStatus
    }

    /// `completed (12 bytes)`, `threw: timed out`, or `interrupted: cancelled`.
    public var description: String {
        if let outcome { return outcome.description }
        return "\(interrupted ? "interrupted" : "threw"): \(error ?? "")"
    }
}
