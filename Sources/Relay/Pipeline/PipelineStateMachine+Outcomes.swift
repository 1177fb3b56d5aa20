import Foundation

extension PipelineStateMachine {
    // MARK: - Outcomes

    /// Applies the end of an attempt.
    mutating func finishAttempt(_ slot: Int32, worker: UInt64, end: AttemptEnd, now: Int64) {
        guard graph[slot].phase == .running, graph[slot].worker == worker else { return }
        let l = Int(graph[slot].lane)
        lanes[l].countAttemptEnd()
        runningTotal -= 1
        if hub.isActive { publishBatchedStart(slot, lane: l, end: end) }
        if case .returned = end {
            giveBack(slot, now: now)
        } else {
            graph[slot].endAttempt(now: now)
        }
        switch end {
        case .outcome(let outcome):
            apply(outcome, to: slot, lane: l, now: now)
        case .reported(let outcome, let report):
            reports[slot] = AttemptFigures(report)
            publish(
                .attemptEnded(report), operation: graph[slot].record.operation.id, sequence: lanes[l].name, now: now)
            apply(outcome, to: slot, lane: l, response: report.response, now: now)
        case .staged(let outcome, let report, let changes):
            if let report {
                reports[slot] = AttemptFigures(report)
                publish(
                    .attemptEnded(report), operation: graph[slot].record.operation.id, sequence: lanes[l].name,
                    now: now)
            }
            apply(outcome, to: slot, lane: l, response: report?.response, now: now)
            commitStagedChanges(changes, of: slot, now: now)
        case .error(let reason):
            retryOrFail(slot, reason: reason, requestedDelay: nil, now: now)
        case .returned:
            break
        case .interrupted(let reason):
            if graph[slot].cancelRequested {
                finish(slot, .cancelled(.requested), now: now)
            } else if lifecycle != .running {
                interrupt(slot, now: now)
            } else {
                retryOrFail(slot, reason: reason, requestedDelay: nil, now: now)
            }
        }
        if lifecycle != .running && runningTotal == 0 { rearmTimers() }
    }

    /// Publishes the start of an operation claimed behind another in a batch, now that its worker reports it ran,
    /// dated when it was claimed; see ``start(_:lane:worker:now:batchIndex:)``.
    private mutating func publishBatchedStart(_ slot: Int32, lane l: Int, end: AttemptEnd) {
        guard graph[slot].batchIndex != OperationSlot.unbatched, graph[slot].batchIndex > 0 else { return }
        if case .returned = end { return }
        publish(
            .started(attempt: Int(graph[slot].attempts)), operation: graph[slot].record.operation.id,
            sequence: lanes[l].name, now: graph[slot].lastStartedAt)
    }

    /// A claimed operation that never ran is ready again, its attempt given back; a cancel that reached it while it
    /// waited in the batch ends it.
    mutating func giveBack(_ slot: Int32, now: Int64) {
        graph[slot].returnAttempt()
        if graph[slot].cancelRequested {
            finish(slot, .cancelled(.requested), now: now)
            return
        }
        let id = graph[slot].record.operation.id
        if recording { records.append(.attemptReturned(id, attempts: Int(graph[slot].attempts))) }
        reevaluate(slot, now: now)
    }

    /// Commits the model changes an attempt staged, in the transition that records its end, when its operation
    /// completed or skipped (S21); an attempt that ends otherwise leaves them out.
    private mutating func commitStagedChanges(_ changes: [ModelChange], of slot: Int32, now: Int64) {
        switch graph[slot].result {
        case .completed, .skipped:
            recordModels(changes, snapshot: graph[slot].snapshot, now: now)
            documentChanges += changes
        default:
            break
        }
    }

    /// Applies what the executor returned; `response` is what it reported of the attempt's response, which a failure
    /// keeps.
    mutating func apply(
        _ outcome: CallOutcome,
        to slot: Int32,
        lane l: Int,
        response: CallResponse? = nil,
        now: Int64
    ) {
        switch outcome {
        case .completed(let data):
            finish(slot, .completed(data), now: now)
        case .skipped:
            finish(slot, .skipped, now: now)
        case .failed(let reason):
            let attempts = Int(graph[slot].attempts)
            finish(slot, .failed(CallFailure(reason: reason, attempts: attempts, response: response)), now: now)
        case .retry(let after, let reason):
            retryOrFail(slot, reason: reason, requestedDelay: after, response: response, now: now)
        case .offline(let reason):
            goOffline(slot, lane: l, reason: reason, response: response, now: now)
        }
    }

    mutating func retryOrFail(
        _ slot: Int32,
        reason: String,
        requestedDelay: Duration?,
        response: CallResponse? = nil,
        now: Int64
    ) {
        if graph[slot].cancelRequested {
            finish(slot, .cancelled(.requested), now: now)
            return
        }
        let attempts = Int(graph[slot].attempts)
        let elapsed = Duration.nanoseconds(now - graph[slot].firstStartedAt)
        let policy = graph[slot].record.operation.retryPolicy
        guard
            let delay = policy.nextDelay(
                afterAttempt: attempts,
                elapsed: elapsed,
                requestedDelay: requestedDelay,
                using: &generator
            )
        else {
            let failure = CallFailure(reason: reason, attempts: attempts, cause: .retriesExhausted, response: response)
            finish(slot, .failed(failure), now: now)
            return
        }
        let (due, overflow) = now.addingReportingOverflow(delay.relayNanoseconds)
        let retryAt = overflow ? Int64.max : due
        timers.retry(slot, at: retryAt)
        graph[slot].mayWaitForTime = true
        let id = graph[slot].record.operation.id
        let failure = CallFailure(reason: reason, attempts: attempts, response: response)
        lastFailures[slot] = failure
        if recording { records.append(.retryScheduled(id, attempt: attempts, at: date(retryAt), failure: failure)) }
        publish(
            .retryScheduled(attempt: attempts, at: date(retryAt), reason: reason),
            operation: id,
            sequence: graph[slot].record.operation.sequenceName,
            now: now
        )
        reevaluate(slot, now: now)
    }

    /// Shutdown interrupted the attempt: the operation is pending again, the attempt counted.
    mutating func interrupt(_ slot: Int32, now: Int64) {
        if recording { records.append(.interrupted(graph[slot].record.operation.id, at: date(now))) }
        reevaluate(slot, now: now)
    }

    /// Ends an operation and everything that must end with it, without recursion: a long chain of dependents that
    /// a failure cancels is walked with an explicit worklist.
    mutating func finish(_ slot: Int32, _ result: CallResult, now: Int64) {
        var cascade: [(Int32, CallResult)] = []
        finishOne(slot, result, now: now, cascade: &cascade)
        while let (next, nextResult) = cascade.popLast() {
            finishOne(next, nextResult, now: now, cascade: &cascade)
        }
    }

    private mutating func finishOne(
        _ slot: Int32, _ result: CallResult, now: Int64, cascade: inout [(Int32, CallResult)]
    ) {
        let previous = graph[slot].phase
        guard previous == .pending || previous == .ready else { return }
        let l = Int(graph[slot].lane)
        if previous == .ready { lanes[l].readyCount -= 1 }
        lanes[l].counts.pending -= 1
        lanes[l].counts.countFinished(result)
        graph[slot].finish(result, now: now)
        if graph[slot].firstStartedAt != OperationSlot.never {
            queueWaits.record(graph[slot].firstStartedAt - graph[slot].enqueuedAt)
            runTimes.record(graph[slot].runNanoseconds)
        }
        let id = graph[slot].record.id
        if recording { records.append(.finished(id, result, at: date(now))) }
        leaveOffline(slot, lane: l, now: now)
        if hub.hasSubscribers(for: id) {
            let metrics = metrics(of: slot)
            let kind: CallEvent.Kind =
                switch result {
                case .completed: .completed(metrics)
                case .skipped: .skipped(metrics)
                case .failed(let failure): .failed(failure, metrics)
                case .cancelled(let reason): .cancelled(reason, metrics)
                }
            publish(kind, operation: id, sequence: lanes[l].name, now: now)
        }
        settle(graph[slot].record, .success(result))
        let (first, more) = graph[slot].takeDependents()
        if first >= 0 { release(first, after: id, ended: result, now: now, cascade: &cascade) }
        for dependent in more { release(dependent, after: id, ended: result, now: now, cascade: &cascade) }
        if lanes[l].algorithm == .commitGraph { commitFinished(graph[slot].snapshot, lane: l, now: now) }
        keep(slot, finishedAt: now)
    }

    /// Tells a dependent that one of its dependencies ended: it counts down, or is cancelled with it.
    mutating func release(
        _ dependent: Int32,
        after id: UUID,
        ended result: CallResult,
        now: Int64,
        cascade: inout [(Int32, CallResult)]
    ) {
        guard graph[dependent].phase != .finished else {
            // Cancelled before this dependency ended: it only stops counting it, and may now be forgotten.
            graph[dependent].unfinishedDependencies -= 1
            if graph[dependent].unfinishedDependencies == 0, graph[dependent].forgettingDeferred {
                graph[dependent].forgettingDeferred = false
                if graph[dependent].purged {
                    forget(dependent)
                } else {
                    keep(dependent, finishedAt: graph[dependent].finishedAt)
                }
            }
            return
        }
        if graph[dependent].record.operation.onDependencyFailure == .cancel,
            let reason = Self.cancellation(afterDependency: id, finished: result)
        {
            cascade.append((dependent, .cancelled(reason)))
        } else {
            graph[dependent].unfinishedDependencies -= 1
            if graph[dependent].unfinishedDependencies == 0 { reevaluate(dependent, now: now) }
        }
    }

    /// With `.commitGraph`, releases the next commit's ready operations once every earlier one has finished.
    mutating func commitFinished(_ snapshot: UInt64, lane l: Int, now: Int64) {
        guard let remaining = lanes[l].commitRemaining[snapshot] else { return }
        if remaining > 1 {
            lanes[l].commitRemaining[snapshot] = remaining - 1
            return
        }
        lanes[l].commitRemaining[snapshot] = nil
        guard lanes[l].oldestOpenCommit == snapshot else { return }
        while let oldest = lanes[l].oldestOpenCommit, lanes[l].commitRemaining[oldest] == nil {
            _ = lanes[l].openCommits.popFirst()
        }
        guard let next = lanes[l].oldestOpenCommit, let released = lanes[l].gated.removeValue(forKey: next) else {
            return
        }
        for slot in released where graph[slot].gated {
            graph[slot].gated = false
            reevaluate(slot, now: now)
        }
    }
}
