import Foundation

extension PipelineStateMachine {
    // MARK: - Outcomes

    /// Applies the end of an attempt.
    mutating func finishAttempt(
        _ slot: Int32, worker: UInt64, end: AttemptEnd, now: Int64, into actions: inout PipelineActions
    ) {
        guard graph[slot].phase == .running, graph[slot].worker == worker else { return }
        let l = Int(graph[slot].lane)
        lanes[l].countAttemptEnd()
        runningTotal -= 1
        clockSleeps.forget(slot)
        if hub.isActive { publishBatchedStart(slot, lane: l, end: end, into: &actions) }
        if !abandoned.isEmpty, abandoned.remove(slot) != nil {
            // Its claim was lost: whatever the attempt found is the next claimer's to find again.
            graph[slot].endAttempt(now: now)
            handToStore(slot, now: now, into: &actions)
            if lifecycle != .running && runningTotal == 0 { rearmTimers(into: &actions) }
            return
        }
        if case .returned = end {
            giveBack(slot, now: now, into: &actions)
        } else {
            graph[slot].endAttempt(now: now)
        }
        switch end {
        case .outcome(let outcome):
            apply(outcome, to: slot, lane: l, now: now, into: &actions)
        case .reported(let outcome, var report):
            report.attachResult(of: outcome)
            reports[slot] = AttemptFigures(report)
            publish(
                .attemptEnded(report), operation: graph[slot].record.operation.id, sequence: lanes[l].name, now: now,
                into: &actions)
            apply(outcome, to: slot, lane: l, response: report.carriedResponse, now: now, into: &actions)
        case .staged(let outcome, var report, let changes):
            report?.attachResult(of: outcome)
            if let report {
                reports[slot] = AttemptFigures(report)
                publish(
                    .attemptEnded(report), operation: graph[slot].record.operation.id, sequence: lanes[l].name,
                    now: now, into: &actions)
            }
            let checked = checkStagedChanges(changes, of: outcome)
            // A completion that its staged changes turn into a failure keeps its response.
            let response = checked.isCompletion ? report?.carriedResponse : report?.response
            apply(checked, to: slot, lane: l, response: response, now: now, into: &actions)
            commitStagedChanges(changes, of: slot, now: now, into: &actions)
        case .error(let reason):
            retryOrFail(slot, reason: reason, requestedDelay: nil, now: now, into: &actions)
        case .returned:
            break
        case .interrupted(let reason):
            if graph[slot].cancelRequested {
                finish(slot, .cancelled(.requested), now: now, into: &actions)
            } else if lifecycle != .running {
                interrupt(slot, now: now, into: &actions)
            } else {
                retryOrFail(slot, reason: reason, requestedDelay: nil, now: now, into: &actions)
            }
        }
        if lifecycle != .running && runningTotal == 0 { rearmTimers(into: &actions) }
    }

    /// Publishes the start of an operation claimed behind another in a batch, now that its worker reports it ran,
    /// dated when it was claimed; see ``start(_:lane:worker:now:batchIndex:)``.
    private mutating func publishBatchedStart(
        _ slot: Int32, lane l: Int, end: AttemptEnd, into actions: inout PipelineActions
    ) {
        guard graph[slot].batchIndex != OperationSlot.unbatched, graph[slot].batchIndex > 0 else { return }
        if case .returned = end { return }
        publish(
            .started(attempt: Int(graph[slot].attempts)), operation: graph[slot].record.operation.id,
            sequence: lanes[l].name, now: graph[slot].lastStartedAt, into: &actions)
    }

    /// A claimed operation that never ran is ready again, its attempt given back; a cancel that reached it while it
    /// waited in the batch ends it.
    mutating func giveBack(_ slot: Int32, now: Int64, into actions: inout PipelineActions) {
        graph[slot].returnAttempt()
        if graph[slot].cancelRequested {
            finish(slot, .cancelled(.requested), now: now, into: &actions)
            return
        }
        let id = graph[slot].record.operation.id
        if recording { actions.records.append(.attemptReturned(id, attempts: Int(graph[slot].attempts))) }
        reevaluate(slot, now: now, into: &actions)
    }

    /// The outcome of an attempt that staged `changes`: as the executor returned it, unless it would commit a
    /// relation that names a model the document does not hold, which fails the operation instead (S23).
    ///
    /// A shared store has decided already, against the document it holds, when the changes add a relation.
    private func checkStagedChanges(_ changes: [ModelChange], of outcome: CallOutcome) -> CallOutcome {
        switch outcome {
        case .completed, .skipped:
            guard !sharing else { return outcome }
            do throws(RelayError) {
                try document.checkRelations(in: changes)
                return outcome
            } catch {
                return .failed(reason: "its staged changes cannot be committed: \(error.message)")
            }
        case .failed, .retry, .offline:
            return outcome
        }
    }

    /// Commits the model changes an attempt staged, when its operation completed or skipped (S21).
    ///
    /// They go in the transition that records the attempt's end, with the removal of the relations of the models they
    /// remove (S23); an attempt that ends otherwise leaves them out. Readers see them once the transition is durable.
    /// On a shared store they ride on the record of the end, which the store commits with them under a number of its
    /// own (or has committed already, when they add a relation: see ``storeDecides(_:)``), and the document takes
    /// them from the store, as it takes every commit's.
    private mutating func commitStagedChanges(
        _ changes: [ModelChange], of slot: Int32, now: Int64, into actions: inout PipelineActions
    ) {
        switch graph[slot].result {
        case .completed(_) where sharing, .skipped where sharing:
            let id = graph[slot].record.operation.id
            guard
                let index = actions.records.lastIndex(where: { $0.kind == .finished && $0.operationID == id }),
                case .finished(_, let result, let date, let ran, _) = actions.records[index].change
            else { return }
            actions.records[index] = .finished(id, result, at: date, ran: ran, changes: changes)
        case .completed, .skipped:
            document.stage(changes)
            let cascade = document.relationsOfRemoved(changes)
            if !cascade.isEmpty { document.stage(cascade) }
            recordModels(changes + cascade, snapshot: graph[slot].snapshot, now: now, into: &actions)
            actions.stagedModels = true
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
        now: Int64,
        into actions: inout PipelineActions
    ) {
        switch outcome {
        case .completed(let data):
            finish(slot, .completed(data), now: now, into: &actions)
        case .skipped:
            finish(slot, .skipped, now: now, into: &actions)
        case .failed(let reason):
            let attempts = Int(graph[slot].attempts)
            finish(
                slot, .failed(CallFailure(reason: reason, attempts: attempts, response: response)), now: now,
                into: &actions)
        case .retry(let after, let reason):
            retryOrFail(slot, reason: reason, requestedDelay: after, response: response, now: now, into: &actions)
        case .offline(let reason):
            goOffline(slot, lane: l, reason: reason, response: response, now: now, into: &actions)
        }
    }

    mutating func retryOrFail(
        _ slot: Int32,
        reason: String,
        requestedDelay: Duration?,
        response: CallResponse? = nil,
        now: Int64,
        into actions: inout PipelineActions
    ) {
        if graph[slot].cancelRequested {
            finish(slot, .cancelled(.requested), now: now, into: &actions)
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
            finish(slot, .failed(failure), now: now, into: &actions)
            return
        }
        let (due, overflow) = now.addingReportingOverflow(delay.relayNanoseconds)
        let retryAt = overflow ? Int64.max : due
        timers.retry(slot, at: retryAt)
        graph[slot].mayWaitForTime = true
        let id = graph[slot].record.operation.id
        let failure = CallFailure(reason: reason, attempts: attempts, response: response)
        lastFailures[slot] = failure
        if recording {
            actions.records.append(.retryScheduled(id, attempt: attempts, at: date(retryAt), failure: failure))
        }
        publish(
            .retryScheduled(attempt: attempts, at: date(retryAt), reason: reason),
            operation: id,
            sequence: graph[slot].record.operation.sequenceName,
            now: now, into: &actions)
        if sharing {
            handToStore(slot, now: now, into: &actions)
        } else {
            reevaluate(slot, now: now, into: &actions)
        }
    }

    /// Shutdown interrupted the attempt: the operation is pending again, the attempt counted.
    mutating func interrupt(_ slot: Int32, now: Int64, into actions: inout PipelineActions) {
        if recording { actions.records.append(.interrupted(graph[slot].record.operation.id, at: date(now))) }
        reevaluate(slot, now: now, into: &actions)
    }

    /// Ends an operation and everything that must end with it, without recursion: a long chain of dependents that
    /// a failure cancels is walked with an explicit worklist.
    mutating func finish(_ slot: Int32, _ result: CallResult, now: Int64, into actions: inout PipelineActions) {
        var cascade: [(Int32, CallResult)] = []
        finishOne(slot, result, now: now, cascade: &cascade, into: &actions)
        while let (next, nextResult) = cascade.popLast() {
            finishOne(next, nextResult, now: now, cascade: &cascade, into: &actions)
        }
    }

    private mutating func finishOne(
        _ slot: Int32, _ result: CallResult, now: Int64, cascade: inout [(Int32, CallResult)],
        into actions: inout PipelineActions
    ) {
        let previous = graph[slot].phase
        guard previous == .pending || previous == .ready else { return }
        let l = Int(graph[slot].lane)
        if previous == .ready { lanes[l].readyCount -= 1 }
        lanes[l].counts.pending -= 1
        lanes[l].counts.countFinished(result)
        unfinishedCount -= 1
        unfinishedBytes -= graph[slot].record.operation.payload.count
        graph[slot].finish(result, now: now)
        if graph[slot].firstStartedAt != OperationSlot.never {
            queueWaits.record(graph[slot].firstStartedAt - graph[slot].enqueuedAt)
            runTimes.record(graph[slot].runNanoseconds)
        }
        let id = graph[slot].record.id
        if recording {
            actions.records.append(.finished(id, result, at: date(now), ran: graph[slot].runNanoseconds))
        }
        if observing { actions.finishes.append((graph[slot].record.operation, result, metrics(of: slot))) }
        leaveOffline(slot, lane: l, now: now, into: &actions)
        if hub.hasSubscribers(for: id) {
            let metrics = metrics(of: slot)
            let kind: CallEvent.Kind =
                switch result {
                case .completed: .completed(metrics)
                case .skipped: .skipped(metrics)
                case .failed(let failure): .failed(failure, metrics)
                case .cancelled(let reason): .cancelled(reason, metrics)
                }
            publish(kind, operation: id, sequence: lanes[l].name, now: now, into: &actions)
        }
        settle(graph[slot].record, .success(result), into: &actions)
        let (first, more) = graph[slot].takeDependents()
        if first >= 0 { release(first, after: id, ended: result, now: now, cascade: &cascade, into: &actions) }
        for dependent in more {
            release(dependent, after: id, ended: result, now: now, cascade: &cascade, into: &actions)
        }
        if lanes[l].algorithm == .commitGraph {
            commitFinished(graph[slot].snapshot, lane: l, now: now, into: &actions)
        }
        keep(slot, finishedAt: now, into: &actions)
    }

    /// Tells a dependent that one of its dependencies ended: it counts down, or is cancelled with it.
    mutating func release(
        _ dependent: Int32,
        after id: UUID,
        ended result: CallResult,
        now: Int64,
        cascade: inout [(Int32, CallResult)],
        into actions: inout PipelineActions
    ) {
        guard graph[dependent].phase != .finished else {
            // Cancelled before this dependency ended: it only stops counting it, and may now be forgotten.
            graph[dependent].unfinishedDependencies -= 1
            if graph[dependent].unfinishedDependencies == 0, graph[dependent].forgettingDeferred {
                graph[dependent].forgettingDeferred = false
                if graph[dependent].purged {
                    forget(dependent, into: &actions)
                } else {
                    keep(dependent, finishedAt: graph[dependent].finishedAt, into: &actions)
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
            if graph[dependent].unfinishedDependencies == 0 { reevaluate(dependent, now: now, into: &actions) }
        }
    }

    /// With `.commitGraph`, releases the next commit's ready operations once every earlier one has finished.
    mutating func commitFinished(_ snapshot: UInt64, lane l: Int, now: Int64, into actions: inout PipelineActions) {
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
            reevaluate(slot, now: now, into: &actions)
        }
    }
}
