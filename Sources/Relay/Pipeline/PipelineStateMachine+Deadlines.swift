extension PipelineStateMachine {
    /// A running attempt's deadline, armed by its executor through ``CallContext/withTimeout(_:_:)``.
    struct AttemptDeadline: Sendable {
        let deadline: Int64
        let worker: UInt64
        var fired = false
    }

    /// Arms the deadline of the attempt the worker runs on `slot`, and returns the one it nests in, if any.
    ///
    /// Deadlines share the timer loop of retries and holds, so an attempt costs a heap entry rather than a sleeping
    /// task. Deadlines of equal timeouts arrive in order, so the loop sleeps once per timeout, not once per attempt.
    /// A nested deadline never outlives the one around it.
    mutating func armDeadline(_ slot: Int32, worker: UInt64, at deadline: Int64) -> AttemptDeadline? {
        let outer = attemptDeadlines[slot]
        let effective = min(deadline, outer?.deadline ?? .max)
        attemptDeadlines[slot] = AttemptDeadline(deadline: effective, worker: worker, fired: outer?.fired ?? false)
        pushDeadline(slot, effective)
        return outer
    }

    /// Disarms the deadline of `slot`'s attempt and restores the one it nested in; returns whether it had passed.
    mutating func disarmDeadline(_ slot: Int32, restoring outer: AttemptDeadline?) -> Bool {
        let inner = attemptDeadlines.removeValue(forKey: slot)
        let fired = inner?.fired ?? false
        guard var outer else { return fired }
        // A nested deadline that was the outer one passed for both.
        if fired, let inner, inner.deadline >= outer.deadline { outer.fired = true }
        attemptDeadlines[slot] = outer
        if !outer.fired { pushDeadline(slot, outer.deadline) }
        return fired
    }

    mutating func pushDeadline(_ slot: Int32, _ deadline: Int64) {
        deadlineTimers.push(TimerEntry(deadline: deadline, slot: slot, token: 0))
        if armedDeadline.map({ deadline < $0 }) ?? true { rearmTimer() }
    }

    /// The earliest deadline still armed; entries of attempts that ended first are dropped on the way.
    mutating func nextAttemptDeadline() -> Int64? {
        while let top = deadlineTimers.min {
            if let armed = attemptDeadlines[top.slot], armed.deadline == top.deadline, !armed.fired {
                return top.deadline
            }
            _ = deadlineTimers.popMin()
        }
        return nil
    }

    /// Cancels the worker of each attempt whose deadline has passed: its executor sees its task cancelled.
    mutating func fireAttemptDeadlines(now: Int64) {
        while let top = deadlineTimers.min, top.deadline <= now {
            _ = deadlineTimers.popMin()
            guard var armed = attemptDeadlines[top.slot], armed.deadline == top.deadline, !armed.fired else { continue }
            armed.fired = true
            attemptDeadlines[top.slot] = armed
            signalCancel(armed.worker)
        }
    }
}
