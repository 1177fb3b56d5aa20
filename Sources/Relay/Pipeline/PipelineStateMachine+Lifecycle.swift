import Foundation

extension PipelineStateMachine {
    mutating func start(now: Int64, into actions: inout PipelineActions) throws(RelayError) {
        switch lifecycle {
        case .idle:
            lifecycle = .running
            // A DataPoint leaves `.idle` once, so the report is published once.
            if let report = recoveryReport {
                publish(.recovered(report), operation: nil, sequence: nil, now: now, into: &actions)
            }
            dispatchAll(into: &actions)
            actions.signals += laneStartWaiters.takeAll()
            actions.signals += startWaiters.takeAll()
        case .running, .stopping:
            throw RelayError(.alreadyRunning, "the DataPoint is already running")
        case .stopped:
            throw RelayError(.shutdown, "the DataPoint has shut down and cannot run again")
        }
    }

    /// The next registered sequence whose supervisor has not started, if the DataPoint runs.
    enum LaneStart: Sendable {
        case start(CallSequence, lane: Int32)
        case wait
        case stop
    }

    /// With a continuation and an id, parks it until a lane may start, unless the answer is known at once.
    mutating func nextLaneToStart(_ waiting: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?) -> LaneStart
    {
        guard lifecycle == .running else { return .stop }
        for lane in lanes.indices where !lanes[lane].supervisorStarted {
            if let sequence = lanes[lane].sequence {
                lanes[lane].supervisorStarted = true
                return .start(sequence, lane: Int32(lane))
            }
        }
        if let waiting, !laneStartWaiters.park(waiting.id, waiting.continuation) { return .stop }
        return .wait
    }

    /// Stops starting operations; running ones may finish until `deadline`, then their tasks are cancelled.
    mutating func beginStop(deadline: Int64, now: Int64, into actions: inout PipelineActions) {
        switch lifecycle {
        case .idle:
            completeShutdown(now: now, into: &actions)
        case .running:
            lifecycle = .stopping(deadline: deadline)
            hub.closeStreamsEndingAtStop(in: &actions.events)
            interruptBatches(lane: nil)
            for lane in lanes.indices {
                for idle in lanes[lane].idleWorkers.takeAll() { actions.workerWakes.append((idle, .recheck)) }
                for spawner in lanes[lane].spawnWaiters.takeAll() { actions.spawnWakes.append((spawner, false)) }
                // A probe may wait seconds for an answer; cancel it, so that its worker exits.
                for prober in lanes[lane].offline.probers { signalCancel(prober, into: &actions) }
            }
            actions.signals += laneStartWaiters.takeAll()
            rearmTimers(into: &actions)
            if deadline <= now { fireTimers(now: now, into: &actions) }
        case .stopping(let current):
            guard deadline < current else { return }
            lifecycle = .stopping(deadline: deadline)
            rearmTimers(into: &actions)
            if deadline <= now { fireTimers(now: now, into: &actions) }
        case .stopped:
            break
        }
    }

    /// Ends the DataPoint's life: every waiter is resumed, with a shutdown error where it awaited an outcome.
    mutating func completeShutdown(now: Int64, into actions: inout PipelineActions) {
        lifecycle = .stopped
        let error = RelayError(
            .shutdown,
            "the DataPoint shut down before the operation finished; it stays stored"
        )
        for slot in graph.unfinished {
            settle(graph[slot].record, .failure(error), into: &actions)
        }
        hub.closeAll(in: &actions.events)
        actions.signals += idleWaiters.takeAll()
        actions.signals += settledWaiters.takeAll()
        actions.signals += stopWaiters.takeAll()
        actions.signals += timers.rearm()
        actions.signals += laneStartWaiters.takeAll()
        actions.signals += startWaiters.takeAll()
        for lane in lanes.indices {
            for idle in lanes[lane].idleWorkers.takeAll() { actions.workerWakes.append((idle, .recheck)) }
            for spawner in lanes[lane].spawnWaiters.takeAll() { actions.spawnWakes.append((spawner, false)) }
        }
        releaseExecutors()
    }

    /// Lets go of every executor once nothing can run them any more: an executor that holds its DataPoint (one that
    /// suspends it, say) would otherwise keep it, and its operations, alive for good.
    private mutating func releaseExecutors() {
        let stopped = StoppedExecutor()
        executors = executors.map { _ in stopped }
        for lane in lanes.indices { lanes[lane].offline.replaceExecutors(with: stopped) }
    }

    /// Parks a wait until the DataPoint starts to run, or returns `true` when it has left `.idle` already or the wait
    /// was cancelled.
    mutating func waitUntilStarted(id: UInt64, _ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard lifecycle == .idle else { return true }
        return !startWaiters.park(id, continuation)
    }

    /// Parks a wait until the pipeline stops, or returns `true` when it has stopped or the wait was cancelled.
    mutating func waitUntilStopped(id: UInt64, _ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard lifecycle != .stopped else { return true }
        return !stopWaiters.park(id, continuation)
    }

    /// Parks a wait until the pipeline is idle (`untilIdle`) or settled, or returns `true` when it is already, or when
    /// the wait was cancelled.
    mutating func waitUntilQuiet(
        untilIdle: Bool,
        now: Int64,
        id: UInt64,
        _ continuation: CheckedContinuation<Void, Never>
    ) -> Bool {
        guard lifecycle != .stopped, !(untilIdle ? isIdle(now: now) : isSettled(now: now)) else { return true }
        return untilIdle ? !idleWaiters.park(id, continuation) : !settledWaiters.park(id, continuation)
    }

    // MARK: - Restore

    /// Rebuilds the graph from a store's state when the DataPoint opens.
    ///
    /// Operations that were running when the process stopped are pending again with their attempt counted.
    /// A dependency the store no longer holds finished long ago and was forgotten, so it counts as satisfied.
    mutating func restore(
        _ stored: StoredState,
        clock: ClockSource,
        directory: inout OperationDirectory,
        now: Int64,
        into actions: inout PipelineActions
    ) {
        recoveryReport = stored.recovery
        suspensionCount = max(0, stored.suspensionCount)
        for sequence in stored.sequences {
            let lane = placeholderLane(sequence.name)
            lanes[Int(lane)].bunchSize = max(1, sequence.bunchSize)
            lanes[Int(lane)].algorithm = sequence.algorithm
            lanes[Int(lane)].suspensionCount = max(0, sequence.suspensionCount)
        }
        var restored: [Int32] = []
        restored.reserveCapacity(stored.operations.count)
        graph.reserve(restoring: stored.operations.count, lastSnapshot: stored.lastSnapshot, in: &directory)
        let records = OperationRecord.records(for: stored.operations.lazy.map(\.operation), snapshot: nil)
        for (position, entry) in stored.operations.enumerated() {
            guard
                let number = graph.restore(
                    records[position],
                    lane: placeholderLane(entry.operation.sequenceName),
                    executor: executorIndex[Self.executorKind(of: entry.operation)] ?? -1,
                    snapshot: entry.operation.snapshot ?? 0,
                    enqueuedAt: clock.time(of: entry.enqueuedAt),
                    in: &directory
                )
            else { continue }
            let record = records[position]
            let contexts = entry.holds.mapValues(clock.time(of:))
            graph[number].restore(
                attempts: Int32(clamping: entry.attempts),
                firstStartedAt: entry.firstStartedAt.map(clock.time(of:)) ?? OperationSlot.never,
                result: entry.result.map { ($0, entry.finishedAt.map(clock.time(of:)) ?? now) }
            )
            if let result = entry.result {
                settle(record, .success(result), into: &actions)
            }
            if let failure = entry.lastFailure { lastFailures[number] = failure }
            graph[number].mayWaitForTime = timers.restore(
                number, holds: contexts, retryAt: entry.retryAt.map(clock.time(of:)))
            restored.append(number)
        }
        var finished: [(finishedAt: Int64, slot: Int32, bytes: Int, deadLetter: Bool)] = []
        for slot in restored {
            let l = Int(graph[slot].lane)
            if let result = result(of: slot) {
                lanes[l].counts.countFinished(result)
                finished.append(
                    (graph[slot].finishedAt, slot, retainedSize(of: slot), RetentionPolicy.isDeadLetter(result)))
                continue
            }
            lanes[l].counts.pending += 1
            if lanes[l].algorithm == .commitGraph { lanes[l].openCommit(graph[slot].snapshot) }
        }
        retention.keep(restored: finished)
        if !finished.isEmpty { rearmTimers(into: &actions) }
        var cancellations: [(Int32, CallResult)] = []
        for slot in restored where graph[slot].phase == .pending {
            if let blocker = wireDependencies(of: slot, in: directory) { cancellations.append((slot, blocker)) }
        }
        for (slot, result) in cancellations { finish(slot, result, now: now, into: &actions) }
        for slot in restored { reevaluate(slot, now: now, into: &actions) }
        forgetBeyondBounds(into: &actions)
    }
}

/// What stands in for every executor of a DataPoint that has stopped; nothing calls it.
private struct StoppedExecutor: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        .failed(reason: "the DataPoint has shut down")
    }
}
