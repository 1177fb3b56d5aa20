import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The pipeline's locks, over its state machine and over its directory of ids: a test-and-test-and-set spin lock that
/// yields the processor while it waits.
///
/// The critical sections it guards cost well under a microsecond per operation, so a waiter does better to spin than
/// to sleep in the kernel, as `Mutex` does on Linux with a priority-inheriting futex that costs a system call on every
/// contended acquisition; one that waits long, behind a large commit, yields the processor now and then.
///
/// Audited: the only `@unchecked Sendable` in Relay. `state` is read and written only inside `withLock` and
/// `withLockIfAvailable`, between an acquiring compare-exchange and a releasing store of `held`, so no two threads
/// ever touch it at once.
final class StateLock<State>: @unchecked Sendable {
    private let held = Atomic<Bool>(false)
    private var state: State

    init(_ state: sending State) {
        self.state = state
    }

    @inline(__always)
    func withLock<Result, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        if !held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            acquireContended()
        }
        defer { held.store(false, ordering: .releasing) }
        return try body(&state)
    }

    /// Runs `body` with the state if the lock is free, without waiting; `nil` when another thread holds it.
    @inline(__always)
    func withLockIfAvailable<Result>(_ body: (inout sending State) -> sending Result) -> sending Result? {
        guard held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return nil }
        defer { held.store(false, ordering: .releasing) }
        return body(&state)
    }

    @inline(never)
    private func acquireContended() {
        var attempts = 0
        while true {
            if !held.load(ordering: .relaxed),
                held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
            {
                return
            }
            attempts += 1
            if attempts >= 1024 {
                // The holder may have been preempted; let it run.
                sched_yield()
                attempts = 0
            }
        }
    }
}
