/// What the timer loop waits for: the times before which held or retrying operations must not start, and the wake-ups
/// that re-evaluate them. (Attempts' deadlines have a loop of their own: ``AttemptTimer``.)
///
/// The state machine tells it what to remember and asks what is due; it also holds the timer loop's parked wait.
/// A call that makes the loop's plan stale (an earlier deadline than the one it sleeps toward) returns the
/// continuations to resume, so that the loop plans again.
struct Timers: Sendable {
    typealias Signal = CheckedContinuation<Void, Never>

    typealias Plan = TimerPlan

    private struct Entry: Comparable, Sendable {
        var deadline: Int64
        var slot: Int32
        /// The slot's token when the entry was pushed; a later token means the entry is stale.
        var token: UInt32

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline < rhs.deadline }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline == rhs.deadline }
    }

    private var wakeups = MinHeap<Entry>()
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

    // MARK: - The loop

    /// The earliest wake-up.
    var nextDeadline: Int64? { wakeups.min?.deadline }

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
