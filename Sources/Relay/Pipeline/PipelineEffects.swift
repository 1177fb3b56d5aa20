/// What a transition asks the core to do after it releases the lock: resume waiters and wake event subscribers.
struct PipelineEffects: Sendable {
    var results: [(CheckedContinuation<CallResult, any Error>, Result<CallResult, any Error>)] = []
    var signals: [CheckedContinuation<Void, Never>] = []
    var workerWakes: [(CheckedContinuation<WorkerWake, Never>, WorkerWake)] = []
    var spawnWakes: [(CheckedContinuation<Bool, Never>, Bool)] = []
    var sinks: [any EventSink] = []

    var isEmpty: Bool {
        results.isEmpty && signals.isEmpty && workerWakes.isEmpty && spawnWakes.isEmpty && sinks.isEmpty
    }

    /// Turns every successful result into `error`, when the transitions could not be made durable.
    mutating func failResults(with error: RelayError) {
        results = results.map { ($0.0, .failure(error)) }
    }

    consuming func perform() {
        for sink in sinks { sink.wake() }
        for (continuation, wake) in workerWakes { continuation.resume(returning: wake) }
        for (continuation, spawn) in spawnWakes { continuation.resume(returning: spawn) }
        for continuation in signals { continuation.resume() }
        for (continuation, result) in results { continuation.resume(with: result) }
    }
}
