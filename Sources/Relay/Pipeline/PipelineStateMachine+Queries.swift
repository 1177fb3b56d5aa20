import Foundation

extension PipelineStateMachine {
    /// An operation's timing; reads the slot's fields in place rather than copying the slot.
    func metrics(of s: Int32) -> CallMetrics {
        let enqueuedAt = graph[s].enqueuedAt
        let firstStartedAt = graph[s].firstStartedAt
        let finishedAt = graph[s].finishedAt
        let started = firstStartedAt == OperationSlot.never ? nil : firstStartedAt
        var metrics = CallMetrics(
            enqueuedAt: date(enqueuedAt),
            startedAt: started.map { date($0) },
            finishedAt: finishedAt == OperationSlot.never ? nil : date(finishedAt),
            queueWait: started.map { .nanoseconds($0 - enqueuedAt) },
            runTime: .nanoseconds(graph[s].runNanoseconds),
            attempts: Int(graph[s].attempts)
        )
        if !reports.isEmpty, let report = reports[s] { metrics.apply(report) }
        return metrics
    }

    func status(of id: UUID, in directory: OperationDirectory, now: Int64) -> CallStatus? {
        guard let slot = lookup(id, in: directory) else { return nil }
        return status(ofSlot: slot, now: now)
    }

    /// The status of the operation in `slot`, or `nil` for a free slot.
    func status(ofSlot slot: Int32, now: Int64) -> CallStatus? {
        let entry = graph[slot]
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
            state = .pending(waiting(for: slot, now: now))
        }
        return CallStatus(
            id: entry.record.operation.id,
            sequenceName: entry.record.operation.sequenceName,
            snapshot: entry.snapshot,
            state: state,
            attempts: Int(entry.attempts),
            metrics: metrics(of: slot),
            lastFailure: lastFailures.isEmpty ? nil : lastFailures[slot]
        )
    }

    func waiting(for s: Int32, now: Int64) -> CallStatus.Waiting {
        let entry = graph[s]
        let lane = lanes[Int(entry.lane)]
        if !lane.isRegistered { return .sequenceNotRegistered(lane.name) }
        if entry.executor < 0 {
            let kind = Self.executorKind(of: graph[s].record.operation)
            if executorIndex[kind] == nil {
                return kind == .authorizedHTTP ? .authorizerNotRegistered : .executorNotRegistered(kind)
            }
        }
        if entry.unfinishedDependencies > 0 { return .dependencies(Int(entry.unfinishedDependencies)) }
        if let offline = lane.offline.reason(of: s) {
            return .offline("\(offline.reason), since \(date(offline.since).readable)")
        }
        let heldUntil = timers.holdEnd(s)
        let retryAt = timers.retryTime(of: s) ?? OperationSlot.never
        if heldUntil > now && heldUntil >= retryAt { return .held(until: date(heldUntil)) }
        if retryAt > now { return .retry(at: date(retryAt)) }
        if entry.gated { return .earlierCommit }
        if let storeFailure { return .storeFailed(storeFailure.message) }
        if suspensionCount > 0 || lane.suspensionCount > 0 { return .suspended }
        return .ready
    }

    func metricsSnapshot(droppedEvents: Int) -> MetricsSnapshot {
        var sequences: [CallSequence.Name: MetricsSnapshot.Counts] = [:]
        for lane in lanes {
            var counts = lane.counts
            counts.offline = lane.offline.waitingCount
            sequences[lane.name] = counts
        }
        return MetricsSnapshot(
            sequences: sequences,
            running: runningTotal,
            queueWait: queueWaits.percentiles(),
            runTime: runTimes.percentiles(),
            droppedEvents: droppedEvents
        )
    }

    func holds(of id: UUID, in directory: OperationDirectory) -> [String?: Date]? {
        guard let slot = lookup(id, in: directory) else { return nil }
        return timers.holds(of: slot).mapValues { date($0) }
    }

    func dependents(of id: UUID, in directory: OperationDirectory) -> [UUID]? {
        guard let slot = lookup(id, in: directory) else { return nil }
        return graph[slot].dependents.map { graph[$0].record.operation.id }
    }

    func operation(_ id: UUID, in directory: OperationDirectory) -> CallOperation? {
        lookup(id, in: directory).map { graph[$0].record.operation }
    }

    /// The sequence actor of a registered lane.
    func sequence(named name: CallSequence.Name) -> CallSequence? {
        laneIndex[name].flatMap { lanes[Int($0)].sequence }
    }

    /// A known operation's record, which its handles share.
    func record(of id: UUID, in directory: OperationDirectory) -> OperationRecord? {
        lookup(id, in: directory).map { graph[$0].record }
    }

    func sequenceConfiguration(_ name: CallSequence.Name) -> (bunchSize: Int, algorithm: CallSequence.Algorithm)? {
        guard let lane = laneIndex[name] else { return nil }
        return (lanes[Int(lane)].bunchSize, lanes[Int(lane)].algorithm)
    }

    func offlineReason(of name: CallSequence.Name) -> String? {
        laneIndex[name].flatMap { lanes[Int($0)].offline.summary }
    }

    func suspensionCount(of name: CallSequence.Name?) -> Int {
        guard let name else { return suspensionCount }
        return laneIndex[name].map { lanes[Int($0)].suspensionCount } ?? 0
    }
}
