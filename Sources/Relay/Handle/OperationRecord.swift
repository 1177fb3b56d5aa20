import Foundation
import Synchronization

/// One operation's content, held by the pipeline while it knows the operation, and its outcome, which the operation's
/// handles await.
///
/// Handles await the outcome here, under the record's own lock, so awaiting never contends with the scheduler, and a
/// live handle keeps its outcome however soon the pipeline forgets the operation. Each operation has its own record:
/// keeping or dropping a handle affects no other operation's memory.
@usableFromInline
final class OperationRecord: Sendable {
    /// The operation as enqueued, with its snapshot.
    let operation: CallOperation
    /// The operation's id, kept beside it so that reading it does not reach into the operation's storage.
    @usableFromInline let id: UUID

    init(operation: CallOperation) {
        self.operation = operation
        id = operation.id
    }

    /// The records of operations enqueued or restored together; a commit stores each with its `snapshot`, a restore
    /// passes `nil` and keeps the one each operation has.
    static func records(
        for operations: some RandomAccessCollection<CallOperation>,
        snapshot: UInt64?
    ) -> [OperationRecord] {
        operations.map { operation in
            var stored = operation
            if let snapshot { stored.snapshot = snapshot }
            return OperationRecord(operation: stored)
        }
    }

    /// Runs an attempt of the operation on `executor`.
    func attempt(on executor: any CallExecutor, context: CallContext) async throws -> CallOutcome {
        try await executor.execute(operation, context: context)
    }

    // MARK: - Outcome

    /// An outcome as kept: the rare error boxed, so that every record stays small.
    private enum Settled {
        case result(CallResult)
        indirect case error(RelayError)

        init(_ outcome: Result<CallResult, RelayError>) {
            switch outcome {
            case .success(let result): self = .result(result)
            case .failure(let error): self = .error(error)
            }
        }

        var outcome: Result<CallResult, RelayError> {
            switch self {
            case .result(let result): .success(result)
            case .error(let error): .failure(error)
            }
        }
    }

    private struct State {
        var settled: Settled?
        var waiters = Waiters<Result<CallResult, any Error>>()
    }

    private let state = Mutex(State())

    /// The outcome if it is settled, read without suspending.
    @usableFromInline
    var settled: Result<CallResult, RelayError>? {
        state.withLock { $0.settled?.outcome }
    }

    /// Waits for the outcome.
    ///
    /// - Important: Cancelling the waiting task ends only this wait, with `CancellationError`.
    @usableFromInline
    func value() async throws -> CallResult {
        if let settled { return try settled.get() }
        let outcome = await Waiters<Result<CallResult, any Error>>.wait(
            cancelled: .failure(CancellationError()),
            park: { id, continuation in
                state.withLock { state in
                    if let settled = state.settled { return settled.outcome.mapError { $0 } }
                    return state.waiters.park(id, continuation) ? nil : .failure(CancellationError())
                }
            },
            cancel: { id in state.withLock { $0.waiters.cancel(id) } },
            forget: { id in state.withLock { $0.waiters.forget(id) } }
        )
        return try outcome.get()
    }

    /// Settles the outcome once and resumes every waiter; later calls do nothing.
    func settle(_ outcome: Result<CallResult, RelayError>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Result<CallResult, any Error>, Never>] in
            guard state.settled == nil else { return [] }
            state.settled = Settled(outcome)
            return state.waiters.takeAll()
        }
        for waiter in waiters { waiter.resume(returning: outcome.mapError { $0 }) }
    }
}
