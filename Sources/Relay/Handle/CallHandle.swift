import Foundation

/// A reference to an enqueued operation, for awaiting its outcome.
///
/// Handles are cheap values. You get one from ``DataPoint/enqueue(_:)-(CallOperation)``, or re-attach to an operation
/// by id with ``DataPoint/handle(for:)``, for example after a restart.
///
/// ```swift
/// let handle = try await point.enqueue(operation)
/// let data = try await handle.value
/// ```
///
/// - Important: Cancelling the task that awaits a handle ends the wait with `CancellationError` and never cancels the
///   operation itself; use ``DataPoint/cancel(_:)`` for that. Every wait is resumed exactly once: with the outcome,
///   or with a ``RelayError/Code/shutdown`` error if the DataPoint shuts down first.
///
/// A handle keeps its own operation's outcome for as long as it lives, and nothing else.
public struct CallHandle: Sendable, Hashable, Identifiable {
    /// The operation's id.
    public let id: UUID
    let core: PipelineCore
    @usableFromInline let record: OperationRecord

    init(record: OperationRecord, core: PipelineCore) {
        id = record.id
        self.record = record
        self.core = core
    }

    /// The operation's terminal state, once it has one.
    ///
    /// A handle keeps its operation's outcome for as long as the handle lives, whatever the retention window. On a
    /// DataPoint that has not started to run, the wait lasts until it runs and the operation ends; cancel the
    /// awaiting task to end it sooner.
    ///
    /// - Throws: ``RelayError`` with code ``RelayError/Code/shutdown`` if the DataPoint shuts down first;
    ///   `CancellationError` if the awaiting task is cancelled.
    @inlinable
    public var outcome: CallResult {
        get async throws {
            // Most handles are awaited after their operation ended. Inlined, reading that outcome costs no call into
            // an async function, which first checks which executor to run on.
            if let settled = record.settled { return try settled.get() }
            return try await record.value()
        }
    }

    /// The result of a completed operation: for one of kind ``CallKind/http``, the response's body (empty for a
    /// download, whose body is in the file); ``response`` has the whole response.
    ///
    /// - Throws: ``RelayError`` with code ``RelayError/Code/operationFailed``, ``RelayError/Code/operationCancelled``
    ///   or ``RelayError/Code/operationSkipped`` when the operation did not complete, and the errors of ``outcome``.
    public var value: Data {
        get async throws { try value(of: try await completedResult) }
    }

    /// What the executor completed the operation with, as stored: for HTTP, the whole response, encoded.
    var completedResult: Data {
        get async throws { try completed(try await outcome) }
    }

    /// The operation's terminal state, waiting no longer than `timeout` on the DataPoint's clock.
    ///
    /// Past the timeout only the wait ends: the operation goes on, and the handle can be awaited again.
    ///
    /// - Parameter timeout: How long to wait.
    /// - Returns: The operation's terminal state.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/deadlineExceeded`` past the timeout, saying where the
    ///   operation stands, and the errors of ``outcome``.
    public func outcome(timeout: Duration) async throws -> CallResult {
        if let settled = record.settled { return try settled.get() }
        let clock = core.clock
        let (end, overflow) = clock.now.addingReportingOverflow(max(.zero, timeout).relayNanoseconds)
        if let result = try await outcome(before: overflow ? .max : end) { return result }
        // Read for the message only: a store that cannot be read leaves it out.
        let state =
            ((try? await status) ?? nil).map {
                " It is \($0.state) after \($0.attempts) attempt\($0.attempts == 1 ? "" : "s")."
            } ?? ""
        throw RelayError(
            .deadlineExceeded, "operation \(id) did not finish within \(timeout.readable); it goes on.\(state)",
            operationIDs: [id])
    }

    /// The result of a completed operation, as ``value``, waiting no longer than `timeout` on the DataPoint's clock.
    ///
    /// Past the timeout only the wait ends: the operation goes on.
    ///
    /// - Parameter timeout: How long to wait.
    /// - Returns: The result, as ``value`` gives it.
    /// - Throws: The errors of ``outcome(timeout:)`` and ``value``.
    public func value(timeout: Duration) async throws -> Data {
        try value(of: try completed(try await outcome(timeout: timeout)))
    }

    /// A completed result as ``value`` gives it: an HTTP call's body, anything else as it is.
    private func value(of result: Data) throws -> Data {
        guard record.operation.kind == .http else { return result }
        return try CallResponse(decoding: result).body
    }

    /// The operation's terminal state, or `nil` once the clock reaches `deadline` first.
    func outcome(before deadline: Int64) async throws -> CallResult? {
        let clock = core.clock
        return try await withThrowingTaskGroup(of: CallResult?.self) { group in
            group.addTask { try await outcome }
            group.addTask {
                try await clock.sleepAsDeadline(until: deadline)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    private func completed(_ result: CallResult) throws(RelayError) -> Data {
        switch result {
        case .completed(let data):
            return data
        case .skipped:
            throw RelayError(.operationSkipped, "operation \(id) was skipped", operationIDs: [id])
        case .failed(let failure):
            throw RelayError(.operationFailed, "operation \(id) failed: \(failure)", operationIDs: [id])
        case .cancelled(let reason):
            throw RelayError(.operationCancelled, "operation \(id) was cancelled: \(reason)", operationIDs: [id])
        }
    }

    /// The operation's current state, or `nil` once the pipeline has forgotten it after its retention window; as
    /// ``DataPoint/status(of:)`` reads it.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure`` when a shared store cannot be read.
    public var status: CallStatus? {
        get async throws { try await core.status(of: id) }
    }

    /// The operation's events from now on; the stream ends after its terminal event, or as the DataPoint begins to
    /// shut down (see ``DataPoint/events(bufferSize:)``).
    ///
    /// On a shared store, the events of an operation that another process runs come from the store, as they happen.
    ///
    /// - Parameter bufferSize: How many events the stream buffers before it drops the oldest.
    /// - Returns: The operation's events.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/unknownOperation`` once the operation has been forgotten.
    public func events(bufferSize: Int = 1024) throws -> CallEventStream {
        try core.subscribe(to: id, ended: record.settled != nil, bufferSize: bufferSize)
    }

    /// Compares handles by operation and DataPoint.
    ///
    /// - Parameters:
    ///   - lhs: A handle.
    ///   - rhs: Another handle.
    /// - Returns: Whether both refer to the same operation of the same DataPoint.
    public static func == (lhs: CallHandle, rhs: CallHandle) -> Bool {
        lhs.id == rhs.id && lhs.core === rhs.core
    }

    /// Hashes the operation's id.
    ///
    /// - Parameter hasher: The hasher.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }
}
