import Foundation

/// The deadlines of running attempts, armed by their executors through ``CallContext/withTimeout(_:_:)``, and the
/// plan of the loop that fires them.
///
/// It belongs to ``AttemptTimer`` alone, behind a lock of its own, and never meets the pipeline's state: arming and
/// disarming, twice in every HTTP attempt, touch nothing else. A deadline that passes reaches the pipeline afterwards,
/// as the ``Attempt`` it cut short, and the pipeline cancels the worker only if it still runs that attempt.
struct AttemptDeadlines: Sendable {
    typealias Signal = CheckedContinuation<Void, Never>

    /// The attempt a deadline cuts short.
    struct Attempt: Sendable, Equatable {
        let slot: Int32
        let worker: UInt64
        let number: Int
        let operationID: UUID
    }

    /// An armed deadline.
    struct Armed: Sendable {
        let deadline: Int64
        let attempt: Attempt
        var fired = false
    }

    typealias Plan = TimerPlan

    private struct Entry: Comparable, Sendable {
        var deadline: Int64
        var slot: Int32

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline < rhs.deadline }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline == rhs.deadline }
    }

    /// Entries stay when their attempt ends first; they are dropped when they reach the top, or all at once when they
    /// outnumber the armed deadlines twice over.
    private var entries = MinHeap<Entry>()
    private var armed: [Int32: Armed] = [:]
    /// Counts plans; a parked wait whose generation is behind is stale.
    private var generation: UInt64 = 0
    /// The deadline the loop sleeps toward, while it sleeps.
    private var planned: Int64?
    private var waiters = Waiters<Void>()
    private var closed = false

    /// Arms the deadline of `attempt`; returns the deadline it nests in, if any, and the loop's wait to resume when
    /// this deadline comes before the one it sleeps toward.
    ///
    /// A nested deadline never outlives the one around it.
    mutating func arm(_ attempt: Attempt, at deadline: Int64) -> (outer: Armed?, signals: [Signal]) {
        let outer = armed[attempt.slot]
        let effective = min(deadline, outer?.deadline ?? .max)
        armed[attempt.slot] = Armed(deadline: effective, attempt: attempt, fired: outer?.fired ?? false)
        push(Entry(deadline: effective, slot: attempt.slot))
        return (outer, rearm(before: effective))
    }

    /// Disarms the deadline of the attempt on `slot` and restores the one it nested in; returns whether it had passed.
    mutating func disarm(_ slot: Int32, restoring outer: Armed?) -> (fired: Bool, signals: [Signal]) {
        let inner = armed.removeValue(forKey: slot)
        let fired = inner?.fired ?? false
        guard var outer else { return (fired, []) }
        // A nested deadline that was the outer one passed for both.
        if fired, let inner, inner.deadline >= outer.deadline { outer.fired = true }
        armed[slot] = outer
        guard !outer.fired else { return (fired, []) }
        push(Entry(deadline: outer.deadline, slot: slot))
        return (fired, rearm(before: outer.deadline))
    }

    /// The loop's next step: sleep until the earliest armed deadline, wait for one, or exit.
    mutating func plan() -> Plan {
        guard !closed else { return .exit }
        while let top = entries.min, !isLive(top) { _ = entries.popMin() }
        planned = entries.min?.deadline
        if let planned { return .sleep(until: planned, generation: generation) }
        return .wait(generation: generation)
    }

    /// Marks every deadline that has passed at `now` as fired, and returns the attempts they cut short.
    ///
    /// Until the loop plans again, any deadline armed makes it plan again.
    mutating func fire(now: Int64) -> [Attempt] {
        planned = nil
        var due: [Attempt] = []
        while let top = entries.min, top.deadline <= now {
            _ = entries.popMin()
            guard isLive(top) else { continue }
            armed[top.slot]!.fired = true
            due.append(armed[top.slot]!.attempt)
        }
        return due
    }

    /// Parks the loop's wait for a new plan; `false` when the plan of `generation` is stale already, the loop is
    /// closed, or the wait was cancelled.
    mutating func park(generation: UInt64, id: UInt64, _ continuation: Signal) -> Bool {
        !closed && generation == self.generation && waiters.park(id, continuation)
    }

    mutating func cancelWait(_ id: UInt64) -> Signal? {
        waiters.cancel(id)
    }

    mutating func forgetWait(_ id: UInt64) {
        waiters.forget(id)
    }

    /// Ends the loop: the engine has stopped, and no worker is left to arm a deadline.
    mutating func close() -> [Signal] {
        closed = true
        return waiters.takeAll()
    }

    /// How many entries the heap holds, live or not.
    var heldEntries: Int { entries.count }

    private func isLive(_ entry: Entry) -> Bool {
        guard let current = armed[entry.slot] else { return false }
        return current.deadline == entry.deadline && !current.fired
    }

    private mutating func push(_ entry: Entry) {
        entries.push(entry)
        // Most attempts end long before their deadline: shed their entries rather than keep a server's minutes of them.
        if entries.count > 2 * armed.count + 64 { entries = MinHeap(entries.elements.filter(isLive)) }
    }

    /// Makes the loop's plan stale when `deadline` comes before the one it sleeps toward, or it sleeps toward none.
    private mutating func rearm(before deadline: Int64) -> [Signal] {
        guard planned.map({ deadline < $0 }) ?? true else { return [] }
        generation &+= 1
        return waiters.isEmpty ? [] : waiters.takeAll()
    }
}
