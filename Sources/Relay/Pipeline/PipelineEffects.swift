/// What a transition asks the core to do after it releases the lock: resume waiters and wake event subscribers.
struct PipelineEffects: Sendable {
    /// Outcomes to settle, which resumes the handles' waiters, once the transition is durable.
    var settlements: [(OperationRecord, Result<CallResult, RelayError>)] = []
    var signals: [CheckedContinuation<Void, Never>] = []
    var workerWakes: [(CheckedContinuation<WorkerWake, Never>, WorkerWake)] = []
    var spawnWakes: [(CheckedContinuation<Bool, Never>, Bool)] = []
    /// Records of forgotten operations, let go after the lock is released: the last release frees the record, and
    /// freeing a commit's worth of them inside the lock kept workers waiting.
    var released: [OperationRecord] = []

    var isEmpty: Bool {
        settlements.isEmpty && signals.isEmpty && workerWakes.isEmpty && spawnWakes.isEmpty
            && released.isEmpty
    }

    /// Empties every list and keeps its storage, for the next transition to fill.
    mutating func clear() {
        settlements.removeAll(keepingCapacity: true)
        signals.removeAll(keepingCapacity: true)
        workerWakes.removeAll(keepingCapacity: true)
        spawnWakes.removeAll(keepingCapacity: true)
        released.removeAll(keepingCapacity: true)
    }

    /// Turns every outcome into `error`, when the transitions could not be made durable.
    mutating func failResults(with error: RelayError) {
        settlements = settlements.map { ($0.0, .failure(error)) }
    }

    func perform() {
        for (continuation, wake) in workerWakes { continuation.resume(returning: wake) }
        for (continuation, spawn) in spawnWakes { continuation.resume(returning: spawn) }
        for continuation in signals { continuation.resume() }
        for (record, result) in settlements { record.settle(result) }
    }
}
