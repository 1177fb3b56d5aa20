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

    /// The timer loop's next step: sleep until the earliest hold, retry, end of the grace period
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
        var deadline = timers.nextDeadline
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
        if case .stopping(let grace) = lifecycle, !graceExpired, grace <= now {
            graceExpired = true
            for worker in Array(workers.keys) { signalCancel(worker, into: &actions) }
        }
        return nextSweep.map { $0 <= now } ?? false
    }

    /// Cancels the workers of attempts whose deadlines passed, each only if it still runs that attempt: its
    /// ``AttemptTimer`` fires without the state's lock, so the attempt may have ended meanwhile.
    mutating func expireAttempts(_ attempts: [AttemptDeadlines.Attempt], into actions: inout PipelineActions) {
        // Slots are never taken away, so the attempt's is still there; its operation may be another by now.
        for attempt in attempts {
            let slot = graph[attempt.slot]
            guard slot.phase == .running, slot.worker == attempt.worker, Int(slot.attempts) == attempt.number,
                slot.record.operation.id == attempt.operationID
            else { continue }
            signalCancel(attempt.worker, into: &actions)
        }
    }
}
