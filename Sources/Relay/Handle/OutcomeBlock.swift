import Foundation
import Synchronization

/// The outcomes of up to ``capacity`` operations committed together, shared by their records and handles.
///
/// Handles await outcomes here, under the block's own lock, so awaiting never contends with the scheduler, and a
/// live handle keeps its outcome however soon the pipeline forgets the operation. Sharing one object among several
/// operations is what makes dropping handles cheap: a handle counts a reference to its block, which the handles
/// committed beside it touched moments before, where a record of its own was a cache miss and a free for each one.
/// The price is that a live handle keeps the outcomes of its block's other operations too.
@usableFromInline
final class OutcomeBlock: Sendable {
    /// The most operations whose outcomes share a block.
    static let capacity = 64

    /// An outcome as kept: the rare error boxed, so that every entry stays small.
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

    private struct Waiter {
        let index: Int32
        let id: UInt32
        let continuation: CheckedContinuation<CallResult, any Error>
    }

    private struct State {
        var outcomes: [Outcome?]
        var nextWaiter: UInt32 = 0
        var waiters: [Waiter] = []
    }

    private let state: Mutex<State>

    /// A block for `count` operations, at most ``capacity``.
    init(count: Int) {
        state = Mutex(State(outcomes: Array(repeating: nil, count: count)))
    }

    /// The outcome of the operation at `index` if it is settled, read without suspending.
    @usableFromInline
    func settledOutcome(at index: Int32) -> Result<CallResult, RelayError>? {
        state.withLock { $0.outcomes[Int(index)]?.value }
    }

    /// Waits for the outcome of the operation at `index`.
    ///
    /// - Important: Cancelling the waiting task ends only this wait, with `CancellationError`.
    @usableFromInline
    func outcome(at index: Int32) async throws -> CallResult {
        let (known, waiter) = state.withLock { state -> (Result<CallResult, RelayError>?, UInt32) in
            if let outcome = state.outcomes[Int(index)] { return (outcome.value, 0) }
            state.nextWaiter &+= 1
            return (nil, state.nextWaiter)
        }
        if let known { return try known.get() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CallResult, any Error>) in
                let cancelled = Task.isCancelled
                let immediate = state.withLock { state -> Result<CallResult, any Error>? in
                    if cancelled { return .failure(CancellationError()) }
                    if let outcome = state.outcomes[Int(index)] { return outcome.value.mapError { $0 } }
                    state.waiters.append(Waiter(index: index, id: waiter, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<CallResult, any Error>? in
                guard let position = state.waiters.firstIndex(where: { $0.id == waiter }) else { return nil }
                return state.waiters.remove(at: position).continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Settles the outcome of the operation at `index` once and resumes its waiters; later calls do nothing.
    func settle(_ outcome: Result<CallResult, RelayError>, at index: Int32) {
        for waiter in record(outcome, at: index) { waiter.resume(with: outcome.mapError { $0 }) }
    }

    /// Records the outcome of the operation at `index` once and returns its waiters, for the caller to resume outside
    /// its own lock.
    func record(
        _ outcome: Result<CallResult, RelayError>,
        at index: Int32
    ) -> [CheckedContinuation<CallResult, any Error>] {
        state.withLock { state in
            guard state.outcomes[Int(index)] == nil else { return [] }
            state.outcomes[Int(index)] = Outcome(outcome)
            guard !state.waiters.isEmpty else { return [] }
            var resumed: [CheckedContinuation<CallResult, any Error>] = []
            state.waiters.removeAll { waiter in
                guard waiter.index == index else { return false }
                resumed.append(waiter.continuation)
                return true
            }
            return resumed
        }
    }
}
