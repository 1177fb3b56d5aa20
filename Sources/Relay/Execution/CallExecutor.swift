/// Runs one attempt of an operation and reports how it went.
///
/// Register an executor per ``CallKind`` with ``DataPoint/register(_:for:)``. The engine calls it from one of the
/// sequence's workers, at most `bunchSize` at a time per sequence.
///
/// ```swift
/// struct Resize: CallExecutor {
///     func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
///         let image = try await render(operation.payload)
///         return .completed(image)
///     }
/// }
/// ```
///
/// - Important: Cancelling an operation cancels the task that runs `execute`; check `Task.isCancelled` or use
///   cancellation-aware APIs. A thrown error never crashes the engine: it counts as a failed attempt that the
///   operation's ``RetryPolicy`` may retry.
public protocol CallExecutor: Sendable {
    /// Runs one attempt.
    ///
    /// - Parameters:
    ///   - operation: The operation, as enqueued, with its snapshot assigned.
    ///   - context: The attempt number and the idempotency key.
    /// - Returns: The attempt's outcome.
    /// - Throws: Any error; it counts as a failed attempt and is retried under the operation's retry policy.
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome

    /// Whether the destination of an operation that came back ``CallOutcome/offline(reason:)`` answers again.
    ///
    /// While a destination is offline, one of its sequence's workers calls this on the DataPoint's clock, a quarter
    /// of a second after it went offline, then twice as far apart after each `false`, up to 30 seconds; the first
    /// `true` lets the operations that wait for the destination start again. The default returns `true`, so the
    /// operation itself is the probe; then, after three rounds in which the operation came back offline again, its
    /// offline outcomes spend attempts. Implement it to wait out an outage of any length.
    ///
    /// - Parameter operation: The first operation that waits for the destination.
    /// - Returns: Whether the destination answers.
    func probe(_ operation: CallOperation) async -> Bool
}

extension CallExecutor {
    /// Returns `true`: the operation itself is the probe.
    ///
    /// - Parameter operation: The operation that found its destination unreachable.
    /// - Returns: `true`.
    public func probe(_ operation: CallOperation) async -> Bool { true }
}

/// An executor made from a closure.
///
/// ```swift
/// point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
/// ```
public struct ClosureExecutor: CallExecutor {
    private let body: @Sendable (CallOperation, CallContext) async throws -> CallOutcome

    /// Creates an executor that runs `body` for each attempt.
    ///
    /// - Parameter body: The attempt's work.
    public init(_ body: @escaping @Sendable (CallOperation, CallContext) async throws -> CallOutcome) {
        self.body = body
    }

    /// Runs one attempt by calling the closure.
    ///
    /// - Parameters:
    ///   - operation: The operation to run.
    ///   - context: The attempt's context.
    /// - Returns: What the closure returned.
    /// - Throws: What the closure threw.
    public func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        try await body(operation, context)
    }
}
