import Synchronization

/// Continuations parked in a lock-guarded state, each under the id its waiting task drew before it parked.
///
/// The state that holds a `Waiters` decides when each wait ends; ``Waiters/wait(cancelled:park:cancel:forget:)`` is
/// the one way Relay suspends on such a state. A task's cancellation can land before its continuation parks: the
/// cancellation handler then finds nothing parked and ``cancel(_:)`` remembers the id, so that ``park(_:_:)`` declines
/// to park it and the wait ends at once. A wait that ends on a cancelled task calls ``forget(_:)``, so that no id is
/// remembered for good.
struct Waiters<Value: Sendable>: Sendable {
    typealias Continuation = CheckedContinuation<Value, Never>

    private var parked: [(id: UInt64, continuation: Continuation)] = []
    private var cancelledBeforeParking: Set<UInt64> = []

    init() {}

    var isEmpty: Bool { parked.isEmpty }

    var count: Int { parked.count }

    /// Parks `continuation` under `id`; `false` when the wait was cancelled first and must end at once.
    mutating func park(_ id: UInt64, _ continuation: Continuation) -> Bool {
        if !cancelledBeforeParking.isEmpty, cancelledBeforeParking.remove(id) != nil { return false }
        parked.append((id, continuation))
        return true
    }

    /// The continuation parked under `id`, which is forgotten; when none is parked yet, the id is remembered so that
    /// its ``park(_:_:)`` declines.
    mutating func cancel(_ id: UInt64) -> Continuation? {
        if let position = parked.firstIndex(where: { $0.id == id }) {
            return parked.remove(at: position).continuation
        }
        cancelledBeforeParking.insert(id)
        return nil
    }

    /// Forgets a cancelled id after its wait ended.
    mutating func forget(_ id: UInt64) {
        if !cancelledBeforeParking.isEmpty { cancelledBeforeParking.remove(id) }
    }

    /// The continuation parked last, which is forgotten.
    mutating func takeLast() -> Continuation? {
        parked.popLast()?.continuation
    }

    /// Every parked continuation, oldest first; all are forgotten.
    mutating func takeAll() -> [Continuation] {
        guard !parked.isEmpty else { return [] }
        defer { parked.removeAll() }
        return parked.map(\.continuation)
    }
}

extension Waiters {
    /// Suspends until the state resumes the wait, or until the task is cancelled.
    ///
    /// - Parameters:
    ///   - cancelled: The value a cancelled wait ends with.
    ///   - park: Runs under the state's lock: parks the continuation under the id in a `Waiters`, or returns the value
    ///     to end the wait with at once (``park(_:_:)`` returning `false` is such a case, with `cancelled`).
    ///   - cancel: Runs under the state's lock, from the cancellation handler: ``cancel(_:)`` on the same `Waiters`.
    ///   - forget: Runs under the state's lock after a cancelled task's wait: ``forget(_:)`` on the same `Waiters`.
    /// - Returns: The value the wait ended with.
    static func wait(
        cancelled: Value,
        park: (UInt64, Continuation) -> Value?,
        cancel: @Sendable (UInt64) -> Continuation?,
        forget: (UInt64) -> Void
    ) async -> Value {
        let id = _waitIDs.add(1, ordering: .relaxed).newValue
        let value = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Continuation) in
                if let value = park(id, continuation) { continuation.resume(returning: value) }
            }
        } onCancel: {
            cancel(id)?.resume(returning: cancelled)
        }
        // The handler never runs after the wait returns; if it ran, the task reads as cancelled here.
        if Task.isCancelled { forget(id) }
        return value
    }
}

/// The ids that waits draw; unique across every `Waiters`.
private let _waitIDs = Atomic<UInt64>(0)
