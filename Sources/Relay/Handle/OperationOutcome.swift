import Synchronization

/// One operation's outcome, shared by its record in the pipeline and by its handles, and nothing else.
///
/// Handles await the outcome here, under its own lock, so awaiting never contends with the scheduler, and a live handle
/// keeps its outcome however soon the pipeline forgets the operation. Each operation has its own: keeping or dropping a
/// handle affects no other operation's memory.
@usableFromInline
final class OperationOutcome: Sendable {
    private struct State {
        var settled: Result<CallResult, RelayError>?
        var waiters = Waiters<Result<CallResult, any Error>>()
    }

    private let state = Mutex(State())

    init() {}

    /// The outcome if it is settled, read without suspending.
    @usableFromInline
    var settled: Result<CallResult, RelayError>? {
        state.withLock { $0.settled }
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
                    if let settled = state.settled { return settled.mapError { $0 } }
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
            state.settled = outcome
            return state.waiters.takeAll()
        }
        for waiter in waiters { waiter.resume(returning: outcome.mapError { $0 }) }
    }
}
