/// Waits until a count that a lock guards reaches a target, ending as soon as the waiting task is cancelled: the one
/// wait behind ``LoopbackServer/waitForRequests(_:)`` and ``ManualClock/waitForSleepers(_:)``.
///
/// The state that counts holds a `CountWaiters` under its lock, parks waits in it, and takes the satisfied ones as
/// its count grows, resuming them after it lets go of the lock.
struct CountWaiters: Sendable {
    private var waiting: [(id: UInt64, target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var nextID: UInt64 = 0

    /// An id for the next wait.
    mutating func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Parks a wait until the count reaches `target`; `false` when the wait must end at once.
    ///
    /// It ends at once when the count has reached the target already, or the task is cancelled. Called under the lock
    /// its cancellation also takes, so a cancel is either seen here or finds the wait parked.
    mutating func park(
        _ id: UInt64, until target: Int, reached current: Int, _ continuation: CheckedContinuation<Void, Never>
    ) -> Bool {
        guard !Task.isCancelled, current < target else { return false }
        waiting.append((id, target, continuation))
        return true
    }

    /// The parked wait of `id`, which is forgotten, if it is still parked.
    mutating func cancel(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return nil }
        return waiting.remove(at: index).continuation
    }

    /// The waits whose target `count` reaches, which are forgotten; resume them after letting go of the lock.
    mutating func takeSatisfied(by count: Int) -> [CheckedContinuation<Void, Never>] {
        guard !waiting.isEmpty else { return [] }
        let satisfied = waiting.filter { $0.target <= count }.map(\.continuation)
        waiting.removeAll { $0.target <= count }
        return satisfied
    }

    /// Suspends until the count's growth ends the wait, or until the task is cancelled.
    ///
    /// `park` calls ``park(_:until:reached:_:)`` under the lock; `cancel` calls ``cancel(_:)`` under it.
    static func wait(
        park: (CheckedContinuation<Void, Never>) -> Bool,
        cancel: @Sendable () -> CheckedContinuation<Void, Never>?
    ) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if !park(continuation) { continuation.resume() }
            }
        } onCancel: {
            cancel()?.resume()
        }
    }
}
