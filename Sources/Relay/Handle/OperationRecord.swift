import Foundation
import Synchronization

/// One operation's content and outcome, shared by the pipeline and every handle to it.
///
/// Handles await the outcome here, under the record's own lock, so awaiting never contends with the scheduler, and
/// a live handle keeps its outcome however soon the pipeline forgets the operation.
@usableFromInline
final class OperationRecord: Sendable {
    /// An outcome as kept: the rare error boxed, so that every record stays small.
    private enum Outcome {
        case result(CallResult)
        indirect case error(RelayError)

        init(_ outcome: Result<CallResult, RelayError>) {
            switch outcome {
            case .success(let result): self = .result(result)
            case .failure(let error): self = .error(error)
            }
        }

        var value: Result<CallResult, RelayError> {
            switch self {
            case .result(let result): .success(result)
            case .error(let error): .failure(error)
            }
        }
    }

    /// Laid out to pack: a 32-bit waiter counter fits beside the outcome, and the record takes 88 bytes, a 96-byte
    /// allocation rather than 128, which every handle kept alive pays for.
    private struct State {
        var outcome: Outcome?
        var nextWaiter: UInt32 = 0
        var waiters: [(id: UInt32, continuation: CheckedContinuation<CallResult, any Error>)] = []
    }

    /// The operation as enqueued, with its snapshot.
    let operation: CallOperation
    private let state = Mutex(State())

    init(operation: CallOperation) {
        self.operation = operation
    }

    var id: UUID { operation.id }

    /// Runs an attempt of the operation on `executor`.
    ///
    /// The record is borrowed for the whole call, and with it the operation, so the operation reaches the executor
    /// without a retain: a caller that read it out of the record retained its storage, whose count the committing task
    /// changes too.
    func attempt(on executor: any CallExecutor, context: CallContext) async throws -> CallOutcome {
        try await executor.execute(operation, context: context)
    }

    /// The outcome if it is settled, read without suspending.
    @usableFromInline
    var settledOutcome: Result<CallResult, RelayError>? {
        state.withLock { $0.outcome?.value }
    }

    /// Waits for the outcome.
    ///
    /// - Important: Cancelling the waiting task ends only this wait, with `CancellationError`.
    @usableFromInline
    func outcome() async throws -> CallResult {
        let (known, waiter) = state.withLock { state -> (Result<CallResult, RelayError>?, UInt32) in
            if let outcome = state.outcome { return (outcome.value, 0) }
            state.nextWaiter &+= 1
            return (nil, state.nextWaiter)
        }
        if let known { return try known.get() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CallResult, any Error>) in
                let cancelled = Task.isCancelled
                let immediate = state.withLock { state -> Result<CallResult, any Error>? in
                    if cancelled { return .failure(CancellationError()) }
                    if let outcome = state.outcome { return outcome.value.mapError { $0 } }
                    state.waiters.append((waiter, continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<CallResult, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == waiter }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Settles the outcome once and resumes every waiter; later calls do nothing.
    func settle(_ outcome: Result<CallResult, RelayError>) {
        for waiter in record(outcome) { waiter.resume(with: outcome.mapError { $0 }) }
    }

    /// Records the outcome once and returns the waiters, for the caller to resume outside its own lock.
    func record(_ outcome: Result<CallResult, RelayError>) -> [CheckedContinuation<CallResult, any Error>] {
        state.withLock { state in
            guard state.outcome == nil else { return [] }
            state.outcome = Outcome(outcome)
            guard !state.waiters.isEmpty else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters.map(\.continuation)
        }
    }
}
