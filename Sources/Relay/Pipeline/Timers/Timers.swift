/// What the timer loop waits for: the times before which held or retrying operations must not start, the wake-ups
/// that re-evaluate them, and the deadlines of running attempts.
///
/// The state machine tells it what to remember and asks what is due; it also holds the timer loop's parked wait.
/// A call that makes the loop's plan stale (an earlier deadline than the one it sleeps toward) returns the
/// continuations to resume, so that the loop plans again.
struct Timers: Sendable {
    typealias Signal = CheckedContinuation<Void, Never>

    /// What the timer loop does next.
    enum Plan: Sendable, Equatable {
        /// Sleep on the clock until `until`, or until the plan of `generation` goes stale.
        case sleep(until: Int64, generation: UInt64)
        /// Nothing is scheduled: wait until the plan of `generation` goes stale.
        case wait(generation: UInt64)
        case exit
    }

    /// A running attempt's deadline, armed by its executor through ``CallContext/withTimeout(_:_:)``.
    struct AttemptDeadline: Sendable {
        let deadline: Int64
        let worker: UInt64
        var fired = false
    }

    private struct Entry: Comparable, Sendable {
        var deadline: Int64
        var slot: Int32
        /// The slot's token when the entry was pushed; a later token means the entry is stale.
        var token: UInt32

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline < rhs.deadline }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline == rhs.deadline }
    }

    private var wakeups = MinHeap<Entry>()
    private var deadlineEntries = MinHeap<Entry>()
    private var attemptDeadlines: [Int32: AttemptDeadline] = [:]
    /// The holds of each held operation, by context; few operations have any, so they live here, not in slots.
    private var holds: [Int32: [String?: Int64]] = [:]
    /// When each operation whose attempt asked for a retry may run again.
    private var retryTimes: [Int32: Int64] = [:]
    /// Counts plans; a parked wait whose generation is behind is stale.
    private var generation: UInt64 = 0
    /// The deadline the loop sleeps toward, while it sleeps.
    private var armed: Int64?
    private var waiters = Waiters<Void>()

    // MARK: - Start times

    /// The time before which an operation must not start: the end of its latest hold or its retry delay.
    func notBefore(_ slot: Int32) -> Int64 {
        max(holdEnd(slot), retryTimes[slot] ?? OperationSlot.never)
    }

    /// The end of an operation's latest hold.
    func holdEnd(_ slot: Int32) -> Int64 {
        holds[slot]?.values.max() ?? OperationSlot.never
    }

    /// An operation's holds by context.
    func holds(of slot: Int32) -> [String?: Int64] {
        holds[slot] ?? [:]
    }

    /// When an operation whose attempt asked for a retry may run again.
    func retryTime(of slot: Int32) -> Int64? {
        retryTimes[slot]
    }

    /// Sets or, with `nil`, releases the hold of `context`; returns whether the operation still waits for a time.
    mutating func hold(_ slot: Int32, until: Int64?, context: String?) -> Bool {
        var contexts = holds[slot] ?? [:]
        contexts[context] = until
        holds[slot] = contexts.isEmpty ? nil : contexts
        return !contexts.isEmpty || retryTimes[slot] != nil
    }

    mutating func retry(_ slot: Int32, at time: Int64) {
        retryTimes[slot] = time
    }

    /// Restores what storage kept of an operation; returns whether it waits for a time.
    mutating func restore(_ slot: Int32, holds contexts: [String?: Int64], retryAt: Int64?) -> Bool {
        if !contexts.isEmpty { holds[slot] = contexts }
        if let retryAt { retryTimes[slot] = retryAt }
        return !contexts.isEmpty || retryAt != nil
    }

    /// Forgets an operation's times as its slot is vacated.
    mutating func forget(_ slot: Int32) {
        if !holds.isEmpty { holds[slot] = nil }
        if !retryTimes.isEmpty { retryTimes[slot] = nil }
    }

    // MARK: - Wake-ups

    /// Re-evaluates `slot` at `deadline`, unless its token has moved on by then.
    mutating func wake(_ slot: Int32, token: UInt32, at deadline: Int64) -> [Signal] {
        wakeups.push(Entry(deadline: deadline, slot: slot, token: token))
        return rearm(before: deadline)
    }

    /// Whether a wake-up is due at `now`, stale or not: the timer loop has not fired it yet.
    func hasWakeup(dueAt now: Int64) -> Bool {
        wakeups.min.map { $0.deadline <= now } ?? false
    }

    /// Takes the next wake-up due at `now`, with the token it was pushed under.
    mutating func takeDueWakeup(now: Int64) -> (slot: Int32, token: UInt32)? {
        guard let top = wakeups.min, top.deadline <= now else { return nil }
        _ = wakeups.popMin()
        return (top.slot, top.token)
    }

    // MARK: - Attempt deadlines

    /// Arms the deadline of the attempt the worker runs on `slot`; returns the deadline it nests in, if any.
    ///
    /// A nested deadline never outlives the one around it.
    mutating func armDeadline(_ slot: Int32, worker: UInt64, at deadline: Int64) -> (
        outer: AttemptDeadline?, signals: [Signal]
    ) {
        let outer = attemptDeadlines[slot]
        let effective = min(deadline, outer?.deadline ?? .max)
        attemptDeadlines[slot] = AttemptDeadline(deadline: effective, worker: worker, fired: outer?.fired ?? false)
        deadlineEntries.push(Entry(deadline: effective, slot: slot, token: 0))
        return (outer, rearm(before: effective))
    }

    /// Disarms the deadline of `slot`'s attempt and restores the one it nested in; returns whether it had passed.
    mutating func disarmDeadline(_ slot: Int32, restoring outer: AttemptDeadline?) -> (
        fired: Bool, signals: [Signal]
    ) {
        let inner = attemptDeadlines.removeValue(forKey: slot)
        let fired = inner?.fired ?? false
        guard var outer else { return (fired, []) }
        // A nested deadline that was the outer one passed for both.
        if fired, let inner, inner.deadline >= outer.deadline { outer.fired = true }
        attemptDeadlines[slot] = outer
        guard !outer.fired else { return (fired, []) }
        deadlineEntries.push(Entry(deadline: outer.deadline, slot: slot, token: 0))
        return (fired, rearm(before: outer.deadline))
    }

    /// Takes the worker of the next attempt whose deadline has passed at `now`; it is marked as fired.
    mutating func takeDueDeadline(now: Int64) -> UInt64? {
        while let top = deadlineEntries.min, top.deadline <= now {
            _ = deadlineEntries.popMin()
            guard var armed = attemptDeadlines[top.slot], armed.deadline == top.deadline, !armed.fired else { continue }
            armed.fired = true
            attemptDeadlines[top.slot] = armed
            return armed.worker
        }
        return nil
    }

    // MARK: - The loop

    /// The earliest wake-up or attempt deadline; entries of attempts that ended first are dropped on the way.
    mutating func nextDeadline() -> Int64? {
        while let top = deadlineEntries.min {
            if let armed = attemptDeadlines[top.slot], armed.deadline == top.deadline, !armed.fired { break }
            _ = deadlineEntries.popMin()
        }
        switch (wakeups.min?.deadline, deadlineEntries.min?.deadline) {
        case (let wakeup?, let deadline?): return min(wakeup, deadline)
        case (let wakeup, let deadline): return wakeup ?? deadline
        }
    }

    /// The loop's plan to sleep until `deadline`, or to wait when there is none.
    mutating func plan(until deadline: Int64?) -> Plan {
        armed = deadline
        if let deadline { return .sleep(until: deadline, generation: generation) }
        return .wait(generation: generation)
    }

    /// Notes that the loop woke to fire what is due; until it plans again, any new deadline rearms it.
    mutating func woke() {
        armed = nil
    }

    /// Makes the loop's plan stale when `deadline` comes before the one it sleeps toward.
    mutating func rearm(before deadline: Int64) -> [Signal] {
        guard armed.map({ deadline < $0 }) ?? true else { return [] }
        return rearm()
    }

    /// Makes the loop's plan stale, so that it plans again.
    mutating func rearm() -> [Signal] {
        generation &+= 1
        return waiters.isEmpty ? [] : waiters.takeAll()
    }

    /// Parks the loop's wait for a new plan; `false` when the plan of `generation` is stale already, or the wait was
    /// cancelled.
    mutating func park(generation: UInt64, id: UInt64, _ continuation: Signal) -> Bool {
        generation == self.generation && waiters.park(id, continuation)
    }

    mutating func cancelWait(_ id: UInt64) -> Signal? {
        waiters.cancel(id)
    }

    mutating func forgetWait(_ id: UInt64) {
        waiters.forget(id)
    }
}
