import Foundation

extension PipelineStateMachine {
    /// An operation's timing; reads the slot's fields in place rather than copying the slot.
    func metrics(of s: Int) -> CallMetrics {
        let enqueuedAt = slots[s].enqueuedAt
        let firstStartedAt = slots[s].firstStartedAt
        let finishedAt = slots[s].finishedAt
        let started = firstStartedAt == OperationSlot.never ? nil : firstStartedAt
        var metrics = CallMetrics(
            enqueuedAt: date(enqueuedAt),
            startedAt: started.map { date($0) },
            finishedAt: finishedAt == OperationSlot.never ? nil : date(finishedAt),
            queueWait: started.map { .nanoseconds($0 - enqueuedAt) },
            runTime: .nanoseconds(slots[s].runNanoseconds),
            attempts: Int(slots[s].attempts)
        )
        if !reports.isEmpty, let report = reports[Int32(s)] { metrics.apply(report) }
        return metrics
    }

    func status(of id: UUID, now: Int64) -> CallStatus? {
        guard let slot = lookup(id) else { return nil }
        let s = Int(slot)
        let entry = slots[s]
        let state: CallStatus.State
        switch entry.phase {
        case .free:
            return nil
        case .finished:
            guard let result = result(of: slot) else { return nil }
            state = .finished(result)
        case .running:
            state = .running(attempt: Int(entry.attempts))
        case .pending, .ready:
            state = .pending(waiting(for: s, now: now))
        }
        return CallStatus(
            id: id,
            sequenceName: slots[s].record.operation.sequenceName,
            snapshot: entry.snapshot,
            state: state,
            attempts: Int(entry.attempts),
            metrics: metrics(of: s)
        )
    }

    func waiting(for s: Int, now: Int64) -> CallStatus.Waiting {
        let entry = slots[s]
        let lane = lanes[Int(entry.lane)]
        if !lane.isRegistered { return .sequenceNotRegistered(lane.name) }
        if entry.executor < 0 && executorIndex[slots[s].record.operation.kind] == nil {
            return .executorNotRegistered(slots[s].record.operation.kind)
        }
        if entry.unfinishedDependencies > 0 { return .dependencies(Int(entry.unfinishedDependencies)) }
        let heldUntil = timers.holdEnd(Int32(s))
        let retryAt = timers.retryTime(of: Int32(s)) ?? OperationSlot.never
        if heldUntil > now && heldUntil >= retryAt { return .held(until: date(heldUntil)) }
        if retryAt > now { return .retry(at: date(retryAt)) }
        if entry.gated { return .earlierCommit }
        if suspensionCount > 0 || lane.suspensionCount > 0 { return .suspended }
        return .ready
    }

    func metricsSnapshot(droppedEvents: Int) -> MetricsSnapshot {
        var sequences: [CallSequence.Name: MetricsSnapshot.Counts] = [:]
        for lane in lanes { sequences[lane.name] = lane.counts }
        return MetricsSnapshot(
            sequences: sequences,
            running: runningTotal,
            queueWait: queueWaits.percentiles(),
            runTime: runTimes.percentiles(),
            droppedEvents: droppedEvents
        )
    }

    func holds(of id: UUID) -> [String?: Date]? {
        guard let slot = lookup(id) else { return nil }
        return timers.holds(of: slot).mapValues { date($0) }
    }

    func dependents(of id: UUID) -> [UUID]? {
        guard let slot = lookup(id) else { return nil }
        return slots[Int(slot)].dependents.map { slots[Int($0)].record.operation.id }
    }

    func operation(_ id: UUID) -> CallOperation? {
        lookup(id).map { slots[Int($0)].record.operation }
    }

    /// The sequence actor of a registered lane.
    func sequence(named name: CallSequence.Name) -> CallSequence? {
        laneIndex[name].flatMap { lanes[Int($0)].sequence }
    }

    /// A known operation's record, which its handles share.
    func record(of id: UUID) -> OperationRecord? {
        lookup(id).map { slots[Int($0)].record }
    }

    func sequenceConfiguration(_ name: CallSequence.Name) -> (bunchSize: Int, algorithm: CallSequence.Algorithm)? {
        guard let lane = laneIndex[name] else { return nil }
        return (lanes[Int(lane)].bunchSize, lanes[Int(lane)].algorithm)
    }

    func suspensionCount(of name: CallSequence.Name?) -> Int {
        guard let name else { return suspensionCount }
        return laneIndex[name].map { lanes[Int($0)].suspensionCount } ?? 0
    }
}
