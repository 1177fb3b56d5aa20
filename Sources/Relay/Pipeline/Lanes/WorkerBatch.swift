import Synchronization

/// What a worker and the pipeline share about the operations the worker claimed in one critical section.
///
/// A worker whose operations finish within microseconds claims several ready operations at once and runs them one
/// after another, so that the pipeline's lock is taken once per batch rather than once per operation. Every claimed
/// operation has started, as the state machine sees it. Until the worker reports back, the pipeline reaches it
/// through two atomics instead of the lock:
/// - `position` is the index of the claimed operation the worker runs, or is about to run;
/// - `interrupt` asks the worker to run no further claimed operation and give the rest back.
///
/// The worker stores `position` before it loads `interrupt`, and the pipeline stores `interrupt` before it loads
/// `position`, both sequentially consistent: either the worker sees the interrupt before it runs an operation, or the
/// pipeline sees that the operation runs and cancels it cooperatively, as any running operation.
final class WorkerBatch: Sendable {
    private let position = Atomic<Int>(0)
    private let interrupt = Atomic<Bool>(false)

    init() {}

    /// Called under the pipeline's lock, when the worker claims a new batch.
    func reset() {
        position.store(0, ordering: .sequentiallyConsistent)
        interrupt.store(false, ordering: .sequentiallyConsistent)
    }

    /// The worker is about to run the claimed operation at `index`; `false` when it must give it back instead.
    func mayRun(_ index: Int) -> Bool {
        position.store(index, ordering: .sequentiallyConsistent)
        return !interrupt.load(ordering: .sequentiallyConsistent)
    }

    /// Asks the worker to run no further claimed operation, and returns the index of the one it runs or is about to.
    @discardableResult
    func stop() -> Int {
        interrupt.store(true, ordering: .sequentiallyConsistent)
        return position.load(ordering: .sequentiallyConsistent)
    }
}
