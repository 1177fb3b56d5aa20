import Foundation

extension PipelineStateMachine {
    // MARK: - Timers

    mutating func scheduleTimer(_ slot: Int32, at deadline: Int64) {
        slots[Int(slot)].token &+= 1
        timers.push(.init(deadline: deadline, slot: slot, token: slots[Int(slot)].token))
        if armedDeadline.map({ deadline < $0 }) ?? true { rearmTimer() }
    }

    mutating func rearmTimer() {
        timerGeneration &+= 1
        effects.signals += timerWaiters.takeAll()
    }

    mutating func timerPlan() -> TimerPlan {
        switch lifecycle {
        case .stopped:
            return .exit
        case .stopping where workers.isEmpty:
            return .exit
        default:
            break
        }
        var deadline = timers.min?.deadline
        if let attemptDeadline = nextAttemptDeadline() { deadline = min(deadline ?? attemptDeadline, attemptDeadline) }
        if case .stopping(let grace) = lifecycle, !graceExpired {
            deadline = min(deadline ?? grace, grace)
        }
        if let sweep = retention.nextSweep { deadline = min(deadline ?? sweep, sweep) }
        armedDeadline = deadline
        if let deadline { return .sleep(until: deadline, generation: timerGeneration) }
        return .wait(generation: timerGeneration)
    }

    /// Parks the timer loop's wait for a new plan, or returns `true` when the plan is stale already.
    mutating func waitForRearm(generation: UInt64, id: UInt64, _ continuation: CheckedContinuation<Void, Never>) -> Bool
    {
        guard generation == timerGeneration, lifecycle != .stopped else { return true }
        return !timerWaiters.park(id, continuation)
    }

    /// Fires every timer that is due, and returns whether the sweep of finished operations is due too.
    @discardableResult
    mutating func fireTimers(now: Int64) -> Bool {
        armedDeadline = nil
        while let top = timers.min, top.deadline <= now {
            _ = timers.popMin()
            let s = Int(top.slot)
            guard slots[s].phase == .pending, slots[s].token == top.token else { continue }
            reevaluate(top.slot, now: now)
        }
        fireAttemptDeadlines(now: now)
        if case .stopping(let grace) = lifecycle, !graceExpired, grace <= now {
            graceExpired = true
            for worker in Array(workers.keys) { signalCancel(worker) }
        }
        return retention.nextSweep.map { $0 <= now } ?? false
    }

    // MARK: - Retention

    /// Forgets up to `limit` operations whose retention window has passed, oldest first; returns whether more remain.
    ///
    /// The limit keeps each critical section short however large the backlog.
    @discardableResult
    mutating func evictExpired(now: Int64, limit: Int = 256) -> Bool {
        let (due, more) = retention.takeDue(now: now, limit: limit)
        for slot in due where slots[Int(slot)].phase == .finished { forget(slot) }
        return more
    }

    /// Keeps an operation that just finished until its retention window passes, and wakes the timer loop when the
    /// operation is the only one kept, so that a DataPoint that goes quiet still forgets it.
    ///
    /// With a window of zero, the operation is forgotten at once, by whoever finished it, while its slot is in cache.
    mutating func retain(_ slot: Int32, finishedAt now: Int64) {
        guard !retention.forgetsAtOnce else {
            forget(slot)
            return
        }
        guard retention.keep(slot, finishedAt: now), let sweep = retention.nextSweep,
            armedDeadline.map({ sweep < $0 }) ?? true
        else { return }
        rearmTimer()
    }

    /// Forgets a finished operation whose window has passed, unless a dependency still lists it; that dependency's
    /// end forgets it then.
    mutating func forget(_ slot: Int32) {
        guard slots[Int(slot)].unfinishedDependencies == 0 else {
            slots[Int(slot)].evictionDeferred = true
            return
        }
        effects.released.append(vacate(slot))
        directory.release(slot)
    }

    /// Makes a slot reusable and hands back its record; the next occupant overwrites every other field.
    @discardableResult
    mutating func vacate(_ slot: Int32) -> OperationRecord {
        if !holds.isEmpty { holds[slot] = nil }
        if !retryTimes.isEmpty { retryTimes[slot] = nil }
        if !reports.isEmpty { reports[slot] = nil }
        return slots[Int(slot)].vacate()
    }

    /// Gives a new operation the slot the directory took for it, in place when the slot was used before.
    mutating func occupy(
        _ slot: Int32,
        record: OperationRecord,
        lane: Int32,
        executor: Int32,
        order: UInt64,
        snapshot: UInt64,
        enqueuedAt: Int64
    ) {
        guard Int(slot) == slots.count else {
            slots[Int(slot)].occupy(
                record: record, lane: lane, executor: executor, order: order, snapshot: snapshot,
                enqueuedAt: enqueuedAt)
            return
        }
        slots.append(
            OperationSlot(
                record: record, lane: lane, executor: executor, order: order, snapshot: snapshot,
                enqueuedAt: enqueuedAt))
    }
}
