import Foundation

/// Retention: finished operations kept for re-attachment until their window passes, then forgotten, and purges.
extension PipelineStateMachine {

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
