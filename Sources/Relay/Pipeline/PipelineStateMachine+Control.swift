import Foundation

extension PipelineStateMachine {
    // MARK: - Suspension

    /// Increments a suspension count and returns the new count.
    ///
    /// A `nil` lane is the whole DataPoint.
    mutating func suspend(lane: Int32?, reason: String, now: Int64, into actions: inout PipelineActions) -> Int {
        let count: Int
        if let lane {
            lanes[Int(lane)].suspensionCount += 1
            count = lanes[Int(lane)].suspensionCount
        } else {
            suspensionCount += 1
            count = suspensionCount
        }
        interruptBatches(lane: lane)
        let name = lane.map { lanes[Int($0)].name }
        if recording { actions.records.append(.suspensionChanged(name, count: count)) }
        if count == 1 { publish(.suspended(reason: reason), operation: nil, sequence: name, now: now, into: &actions) }
        return count
    }

    /// Decrements a suspension count, never below zero, and returns the new count.
    ///
    /// A `nil` lane is the whole DataPoint.
    mutating func resume(lane: Int32?, reason: String, now: Int64, into actions: inout PipelineActions) -> Int {
        let count: Int
        if let lane {
            guard lanes[Int(lane)].suspensionCount > 0 else { return 0 }
            lanes[Int(lane)].suspensionCount -= 1
            count = lanes[Int(lane)].suspensionCount
        } else {
            guard suspensionCount > 0 else { return 0 }
            suspensionCount -= 1
            count = suspensionCount
        }
        let name = lane.map { lanes[Int($0)].name }
        if recording { actions.records.append(.suspensionChanged(name, count: count)) }
        guard count == 0 else { return count }
        publish(.resumed(reason: reason), operation: nil, sequence: name, now: now, into: &actions)
        if let lane { dispatch(lane, into: &actions) } else { dispatchAll(into: &actions) }
        return 0
    }

    /// Announces a change that a shared store made to a fleet-wide suspension count.
    ///
    /// ``CallEvent/Kind/suspended(reason:)`` when it rose from zero, ``CallEvent/Kind/resumed(reason:)`` when it fell
    /// to zero. This process's own counts are left as they are: the store's claims obey the fleet's.
    ///
    /// A `nil` lane is the whole DataPoint.
    mutating func announceSuspension(
        lane: Int32?, previous: Int, count: Int, reason: String, now: Int64, into actions: inout PipelineActions
    ) {
        let name = lane.map { lanes[Int($0)].name }
        if previous == 0, count > 0 {
            publish(.suspended(reason: reason), operation: nil, sequence: name, now: now, into: &actions)
        } else if previous > 0, count == 0 {
            publish(.resumed(reason: reason), operation: nil, sequence: name, now: now, into: &actions)
        }
    }

    // MARK: - Holds

    /// The time before which an operation must not start: the end of its latest hold or its retry delay.
    @inline(__always)
    func notBefore(_ slot: Int32) -> Int64 {
        guard graph[slot].mayWaitForTime else { return OperationSlot.never }
        return timers.notBefore(slot)
    }

    mutating func hold(
        _ id: UUID,
        until: Int64?,
        context: String?,
        in directory: OperationDirectory,
        now: Int64,
        into actions: inout PipelineActions
    ) throws(RelayError) {
        guard let slot = lookup(id, in: directory) else {
            throw RelayError(.unknownOperation, "cannot hold \(id): no such operation is known", operationIDs: [id])
        }
        guard graph[slot].phase != .finished else {
            throw RelayError(.operationFinished, "cannot hold \(id): it has finished", operationIDs: [id])
        }
        hold(slot, until: until, context: context, now: now, into: &actions)
    }

    /// Holds the operation in `slot`, which has not finished.
    mutating func hold(_ slot: Int32, until: Int64?, context: String?, now: Int64, into actions: inout PipelineActions)
    {
        let id = graph[slot].record.operation.id
        graph[slot].mayWaitForTime = timers.hold(slot, until: until, context: context)
        if recording { actions.records.append(.held(id, until: until.map { date($0) }, context: context)) }
        publish(
            .held(until: until.map { date($0) }, context: context),
            operation: id,
            sequence: graph[slot].record.operation.sequenceName,
            now: now, into: &actions)
        if graph[slot].phase == .ready && timers.holdEnd(slot) > now {
            graph[slot].phase = .pending
            graph[slot].token &+= 1
            lanes[Int(graph[slot].lane)].readyCount -= 1
        }
        reevaluate(slot, now: now, into: &actions)
    }

    // MARK: - Cancellation

    /// Cancels a pending operation at once, or asks a running one to stop.
    ///
    /// Returns whether anything changed.
    mutating func cancel(_ id: UUID, in directory: OperationDirectory, now: Int64, into actions: inout PipelineActions)
        throws(RelayError) -> Bool
    {
        guard let slot = lookup(id, in: directory) else {
            throw RelayError(.unknownOperation, "cannot cancel \(id): no such operation is known", operationIDs: [id])
        }
        switch graph[slot].phase {
        case .finished, .free:
            return false
        case .running:
            guard !graph[slot].cancelRequested else { return false }
            graph[slot].cancelRequested = true
            cancelRunning(slot, into: &actions)
            return true
        case .pending, .ready:
            finish(slot, .cancelled(.requested), now: now, into: &actions)
            return true
        }
    }

    /// Cancels a running operation's task, unless it is a claimed operation of a batch that has not begun: the worker
    /// then gives it back, and the operation the worker runs meanwhile goes on.
    mutating func cancelRunning(_ slot: Int32, into actions: inout PipelineActions) {
        let worker = graph[slot].worker
        let index = graph[slot].batchIndex
        guard index != OperationSlot.unbatched, let batch = workers[worker]?.batch else {
            signalCancel(worker, into: &actions)
            return
        }
        if batch.stop() == Int(index) { signalCancel(worker, into: &actions) }
    }

    /// Asks the workers of `lane`, or of every lane, to start none of the operations they claimed and have not begun.
    mutating func interruptBatches(lane: Int32?) {
        // A worker without a batch ignores the request, and its next batch starts with a fresh one.
        for state in workers.values where lane == nil || state.lane == lane {
            state.batch.stop()
        }
    }

    /// Marks a worker so it takes no further operation, stops its batch, and cancels its task through its cancel
    /// signal.
    mutating func signalCancel(_ worker: UInt64, into actions: inout PipelineActions) {
        guard var state = workers[worker], !state.doomed else { return }
        state.batch.stop()
        state.doomed = true
        doomedWorkers += 1
        state.cancelSignalled = true
        actions.signals += state.cancelWaiters.takeAll()
        workers[worker] = state
    }

    /// Parks a worker's wait for its cancel signal, or returns `true` when the signal was sent already.
    mutating func waitForCancelSignal(_ worker: UInt64, id: UInt64, _ continuation: CheckedContinuation<Void, Never>)
        -> Bool
    {
        guard !(workers[worker]?.cancelSignalled ?? true) else { return true }
        return !workers[worker]!.cancelWaiters.park(id, continuation)
    }
}
