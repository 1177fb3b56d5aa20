import Foundation

extension PipelineStateMachine {
    // MARK: - Timers

    /// Re-evaluates `slot` at `deadline`: a hold or a retry delay ends then.
    mutating func wake(_ slot: Int32, at deadline: Int64, into actions: inout PipelineActions) {
        graph[slot].token &+= 1
        actions.signals += timers.wake(slot, token: graph[slot].token, at: deadline)
    }

    /// Makes the timer loop plan again.
    mutating func rearmTimers(into actions: inout PipelineActions) {
        actions.signals += timers.rearm()
    }

    /// The timer loop's next step: sleep until the earliest hold, retry, attempt deadline, end of the grace period
    /// or sweep of finished operations, wait for one, or exit.
    mutating func timerPlan() -> Timers.Plan {
        switch lifecycle {
        case .stopped:
            return .exit
        case .stopping where workers.isEmpty:
            return .exit
        default:
            break
        }
        var deadline = timers.nextDeadline()
        if case .stopping(let grace) = lifecycle, !graceExpired {
            deadline = min(deadline ?? grace, grace)
        }
        if let sweep = nextSweep { deadline = min(deadline ?? sweep, sweep) }
        return timers.plan(until: deadline)
    }

    /// When the timer loop next sweeps: forgets finished operations whose window has passed, and vacates the slots of
    /// forgotten ones, which a worker that forgets them cannot (it never holds the directory) and which a commit would
    /// otherwise vacate.
    var nextSweep: Int64? {
        guard graph.hasRemoved else { return retention.nextSweep }
        return min(retention.nextSweep ?? .max, retention.nextVacate)
    }

    /// Parks the timer loop's wait for a new plan, or returns `true` when the plan is stale already.
    mutating func waitForRearm(generation: UInt64, id: UInt64, _ continuation: CheckedContinuation<Void, Never>) -> Bool
    {
        guard lifecycle != .stopped else { return true }
        return !timers.park(generation: generation, id: id, continuation)
    }

    /// Fires every timer that is due, and returns whether the sweep of finished operations is due too.
    @discardableResult
    mutating func fireTimers(now: Int64, into actions: inout PipelineActions) -> Bool {
        timers.woke()
        while let (slot, token) = timers.takeDueWakeup(now: now) {
            guard graph[slot].phase == .pending, graph[slot].token == token else { continue }
            reevaluate(slot, now: now, into: &actions)
        }
        while let worker = timers.takeDueDeadline(now: now) { signalCancel(worker, into: &actions) }
        if case .stopping(let grace) = lifecycle, !graceExpired, grace <= now {
            graceExpired = true
            for worker in Array(workers.keys) { signalCancel(worker, into: &actions) }
        }
        return nextSweep.map { $0 <= now } ?? false
    }

    /// Arms the deadline of the attempt the worker runs on `slot`, and returns the one it nests in, if any.
    ///
    /// Deadlines share the timer loop of retries and holds, so an attempt costs a heap entry, not a sleeping task.
    mutating func armDeadline(_ slot: Int32, worker: UInt64, at deadline: Int64, into actions: inout PipelineActions)
        -> Timers.AttemptDeadline?
    {
        let (outer, signals) = timers.armDeadline(slot, worker: worker, at: deadline)
        actions.signals += signals
        return outer
    }

    /// Disarms the deadline of `slot`'s attempt and restores the one it nested in; returns whether it had passed.
    mutating func disarmDeadline(
        _ slot: Int32, restoring outer: Timers.AttemptDeadline?, into actions: inout PipelineActions
    ) -> Bool {
        let (fired, signals) = timers.disarmDeadline(slot, restoring: outer)
        actions.signals += signals
        return fired
    }

    // MARK: - Retention

    /// Forgets up to `limit` operations whose retention window has passed, oldest first; returns whether more remain.
    ///
    /// The limit keeps each critical section short however large the backlog.
    @discardableResult
    mutating func forgetExpired(now: Int64, limit: Int = 256, into actions: inout PipelineActions) -> Bool {
        let (due, more) = retention.takeDue(now: now, limit: limit)
        for slot in due where graph[slot].phase == .finished { forget(slot, into: &actions) }
        return more
    }

    /// Keeps an operation that just finished until its retention window passes, and wakes the timer loop when the
    /// operation is the only one kept, so that a DataPoint that goes quiet still forgets it.
    ///
    /// With a window of zero, the operation is forgotten at once, by whoever finished it, while its slot is in cache.
    mutating func keep(_ slot: Int32, finishedAt now: Int64, into actions: inout PipelineActions) {
        let deadLetter = graph[slot].result.map(RetentionPolicy.isDeadLetter) ?? false
        guard !retention.forgetsAtOnce(deadLetter: deadLetter) else {
            forget(slot, into: &actions)
            return
        }
        let first = retention.keep(slot, finishedAt: now, bytes: retainedSize(of: slot), deadLetter: deadLetter)
        forgetBeyondBounds(into: &actions)
        guard first, let sweep = retention.nextSweep else { return }
        actions.signals += timers.rearm(before: sweep)
    }

    /// What a finished operation counts toward the retention's bound on bytes.
    func retainedSize(of slot: Int32) -> Int {
        RetentionPolicy.retainedSize(
            payload: graph[slot].record.operation.payload.count, result: graph[slot].result ?? .skipped)
    }

    /// Forgets the oldest finished operations kept beyond the retention's bounds on count and bytes.
    mutating func forgetBeyondBounds(into actions: inout PipelineActions) {
        while let oldest = retention.takeExcess() {
            if graph[oldest].phase == .finished { forget(oldest, into: &actions) }
        }
    }

    /// Forgets finished operations before their retention passes, and records it; returns how many it forgot.
    ///
    /// Ids of operations already forgotten are passed over. An unfinished one throws, and nothing is purged.
    mutating func purge(
        _ ids: [UUID], in directory: OperationDirectory, now: Int64, into actions: inout PipelineActions
    ) throws(RelayError) -> Int {
        var slots: [Int32] = []
        var purged: [UUID] = []
        for id in ids {
            guard let slot = lookup(id, in: directory), !graph[slot].purged else { continue }
            guard graph[slot].phase == .finished else {
                throw RelayError(
                    .operationUnfinished, "cannot purge \(id): it has not finished; cancel it first",
                    operationIDs: [id])
            }
            slots.append(slot)
            purged.append(id)
        }
        guard !slots.isEmpty else { return 0 }
        retention.remove(Set(slots))
        for slot in slots {
            graph[slot].purged = true
            forget(slot, into: &actions)
        }
        if recording { actions.records.append(.purged(purged, at: date(now))) }
        return slots.count
    }

    /// Forgets a finished operation whose window has passed, unless a dependency still lists it; that dependency's
    /// end forgets it then.
    mutating func forget(_ slot: Int32, into actions: inout PipelineActions) {
        guard graph[slot].unfinishedDependencies == 0 else {
            graph[slot].forgettingDeferred = true
            return
        }
        timers.forget(slot)
        if !reports.isEmpty { reports[slot] = nil }
        if !lastFailures.isEmpty { lastFailures[slot] = nil }
        // The first operation to wait for its slot to be vacated may bring the timer loop's sweep forward.
        if !graph.hasRemoved { actions.signals += timers.rearm(before: retention.nextVacate) }
        graph.remove(slot)
    }
}
