/// A worker task of a sequence, as the pipeline sees it.
struct WorkerState: Sendable {
    let lane: Int32
    /// Shared with the worker for the batches it claims; each claimed slot keeps its place in it.
    let batch = WorkerBatch()
    /// It must not take another operation: its task is being cancelled.
    var doomed = false
    /// Set when the cancel signal was sent before its waiter registered.
    var cancelSignalled = false
    var cancelWaiters = Waiters<Void>()
}

/// How a parked worker was resumed.
enum WorkerWake: Sendable {
    /// Dispatch chose it for ready work.
    case work
    /// Something else changed: shutdown, cancellation, or a state it must re-check.
    case recheck
}
