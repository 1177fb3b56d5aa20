import Synchronization

/// A barrier that tasks wait at until a test opens it; for holding executors in place while a test looks.
///
/// ```swift
/// let gate = Gate()
/// point.register(ClosureExecutor { _, _ in await gate.wait(); return .completed(Data()) }, for: "slow")
/// // ... enqueue, then check that the operation runs ...
/// await gate.waitForArrivals(1)
/// gate.open()
/// ```
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var arrivals = 0
        var arrivalWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Creates a closed gate.
    public init() {}

    /// How many tasks have arrived at the gate, including those it let through.
    public var arrivals: Int { state.withLock(\.arrivals) }

    /// Waits until the gate opens; returns at once if it is open.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (passNow, satisfied) = state.withLock { state in
                state.arrivals += 1
                let satisfied = state.arrivalWaiters.filter { $0.count <= state.arrivals }.map(\.continuation)
                state.arrivalWaiters.removeAll { $0.count <= state.arrivals }
                if state.isOpen { return (true, satisfied) }
                state.waiters.append(continuation)
                return (false, satisfied)
            }
            for waiter in satisfied { waiter.resume() }
            if passNow { continuation.resume() }
        }
    }

    /// Returns once at least `count` tasks have arrived at the gate.
    ///
    /// - Parameter count: How many arrivals to wait for.
    public func waitForArrivals(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                guard state.arrivals < count else { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Opens the gate: every waiting task continues, and later ones pass at once.
    public func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
