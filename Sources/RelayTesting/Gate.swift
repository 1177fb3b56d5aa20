import Synchronization

/// A barrier that tasks wait at until a test opens it; for holding executors in place while a test looks.
///
/// ```swift
/// let gate = Gate()
/// point.register(
///     ClosureExecutor { _, _ in
///         await gate.wait()
///         return .completed(Data())
///     }, for: "slow")
/// // ... enqueue, then check that the operation runs ...
/// await gate.waitForArrivals(1)
/// gate.open()
/// ```
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        var arrivals = 0
        var arrivalWaiters: [(id: UInt64, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var nextID: UInt64 = 1
        /// Waits whose task was cancelled before they parked; they end at once when they try.
        var cancelledEarly: Set<UInt64> = []

        mutating func drawID() -> UInt64 {
            defer { nextID += 1 }
            return nextID
        }

        /// The parked continuation of wait `id`, taken; when none is parked yet, the wait ends as it parks.
        mutating func cancel(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
            if let index = waiters.firstIndex(where: { $0.id == id }) { return waiters.remove(at: index).continuation }
            if let index = arrivalWaiters.firstIndex(where: { $0.id == id }) {
                return arrivalWaiters.remove(at: index).continuation
            }
            cancelledEarly.insert(id)
            return nil
        }
    }

    private let state = Mutex(State())

    /// Creates a closed gate.
    public init() {}

    /// How many tasks have arrived at the gate, including those it let through.
    public var arrivals: Int { state.withLock(\.arrivals) }

    /// Whether the gate has opened.
    public var isOpen: Bool { state.withLock(\.isOpen) }

    /// Waits until the gate opens; returns at once if it is open, and as soon as the waiting task is cancelled.
    public func wait() async {
        let id = state.withLock { $0.drawID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (passNow, satisfied) = state.withLock { state in
                    state.arrivals += 1
                    let satisfied = state.arrivalWaiters.filter { $0.count <= state.arrivals }.map(\.continuation)
                    state.arrivalWaiters.removeAll { $0.count <= state.arrivals }
                    if state.isOpen || state.cancelledEarly.remove(id) != nil { return (true, satisfied) }
                    state.waiters.append((id, continuation))
                    return (false, satisfied)
                }
                for waiter in satisfied { waiter.resume() }
                if passNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.cancel(id) }?.resume()
        }
        state.withLock { _ = $0.cancelledEarly.remove(id) }
    }

    /// Returns once at least `count` tasks have arrived at the gate, or as soon as the waiting task is cancelled.
    ///
    /// - Parameter count: How many arrivals to wait for.
    public func waitForArrivals(_ count: Int) async {
        let id = state.withLock { $0.drawID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    guard state.arrivals < count, state.cancelledEarly.remove(id) == nil else { return true }
                    state.arrivalWaiters.append((id, count, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.cancel(id) }?.resume()
        }
        state.withLock { _ = $0.cancelledEarly.remove(id) }
    }

    /// Opens the gate: every waiting task continues, and later ones pass at once.
    public func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume() }
    }
}
