import Foundation

/// What one event of the ``PipelineStateMachine`` asks its shell to do, returned by the event rather than kept on the
/// machine: records for storage, events for subscribers, whether the document staged models, and continuations to
/// resume once the lock is let go.
///
/// ``PipelineCore/transition(_:)`` makes one for each event, hands the records and events on and seals the staged
/// models with the records' ticket while it still holds the lock, so that storage, subscribers and readers see
/// transitions in the order they happened, and performs the rest outside the lock once the records are durable. A
/// worker passes its own, emptied after each step, so that its arrays keep their storage from one step to the next.
struct PipelineActions: Sendable {
    /// Records to append to storage.
    var records: [StorageRecord] = []
    /// Events for the subscribers.
    var events = EventBatch()
    /// Whether the event staged model changes in the document, a transaction's or a completion's, which the
    /// transition's ticket must seal.
    var stagedModels = false
    /// Outcomes to settle, which resumes the handles' waiters, once the transition is durable.
    var settlements: [(OperationRecord, Result<CallResult, RelayError>)] = []
    var signals: [CheckedContinuation<Void, Never>] = []
    var workerWakes: [(CheckedContinuation<WorkerWake, Never>, WorkerWake)] = []
    var spawnWakes: [(CheckedContinuation<Bool, Never>, Bool)] = []
    /// Waits for idle or stalled that end, with the stalled operations' ids (none when idle).
    var stallWakes: [(CheckedContinuation<[UUID], Never>, [UUID])] = []
    /// Records of forgotten operations, let go after the lock is released: the last release frees the record, and
    /// freeing a commit's worth of them inside the lock kept workers waiting.
    var released: [OperationRecord] = []
    /// Operations that finished, for the observers, once the transition is durable.
    var finishes: [(CallOperation, CallResult, CallMetrics)] = []
    /// Records of operations given back to a shared store, whose retries wait or whose claims were lost: their handles
    /// here settle when the store reports the outcome, from whichever process runs them.
    var handedToStore: [OperationRecord] = []

    /// Whether nothing is left to perform once the lock is let go.
    var isEmpty: Bool {
        settlements.isEmpty && signals.isEmpty && workerWakes.isEmpty && spawnWakes.isEmpty && stallWakes.isEmpty
            && released.isEmpty && finishes.isEmpty && handedToStore.isEmpty
    }

    /// Empties every list and keeps its storage, for the next step to fill; a worker's steps mostly leave them empty.
    mutating func clear() {
        if !records.isEmpty { records.removeAll(keepingCapacity: true) }
        if !events.steps.isEmpty { events.steps.removeAll(keepingCapacity: true) }
        stagedModels = false
        guard !isEmpty else { return }
        settlements.removeAll(keepingCapacity: true)
        signals.removeAll(keepingCapacity: true)
        workerWakes.removeAll(keepingCapacity: true)
        spawnWakes.removeAll(keepingCapacity: true)
        stallWakes.removeAll(keepingCapacity: true)
        released.removeAll(keepingCapacity: true)
        finishes.removeAll(keepingCapacity: true)
        handedToStore.removeAll(keepingCapacity: true)
    }

    /// Turns every outcome into `error`, when the transition could not be made durable.
    mutating func failResults(with error: RelayError) {
        settlements = settlements.map { ($0.0, .failure(error)) }
    }

    /// Wakes the workers, and the supervisor that starts them, before the transition is durable, and leaves the rest
    /// for ``perform(observers:)``.
    ///
    /// What a woken worker claims records its start after this transition's records, and runs only once that record
    /// is durable: nothing runs before this transition is, nor if it never is. Woken at once, the worker's start can
    /// share this transition's sync instead of waiting for the next one.
    mutating func wakeWorkers() {
        guard !workerWakes.isEmpty || !spawnWakes.isEmpty else { return }
        for (continuation, wake) in workerWakes { continuation.resume(returning: wake) }
        for (continuation, spawn) in spawnWakes { continuation.resume(returning: spawn) }
        workerWakes.removeAll(keepingCapacity: true)
        spawnWakes.removeAll(keepingCapacity: true)
    }

    /// Tells the observers of finished operations, then resumes what waits and settles the outcomes; outside the
    /// lock, once the transition is durable.
    func perform(observers: [any CallObserver]) {
        // Before the handles: once a handle has its outcome, the observers have heard of it.
        for (operation, result, metrics) in finishes {
            for observer in observers { observer.finished(operation, result: result, metrics: metrics) }
        }
        perform()
    }

    /// Resumes what waits and settles the outcomes; outside the lock, once the transition is durable.
    func perform() {
        for (continuation, wake) in workerWakes { continuation.resume(returning: wake) }
        for (continuation, spawn) in spawnWakes { continuation.resume(returning: spawn) }
        for continuation in signals { continuation.resume() }
        for (continuation, stalled) in stallWakes { continuation.resume(returning: stalled) }
        for (record, result) in settlements { record.settle(result) }
    }
}
