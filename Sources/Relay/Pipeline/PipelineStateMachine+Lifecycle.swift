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

    /// Starts the next registered lane whose supervisor has not started, or parks `waiting` until one may start.
    ///
    /// The caller starts the lane it is given: the lane counts as started from this answer on.
    mutating func nextLaneToStart(parking waiting: (id: UInt64, continuation: CheckedContinuation<Void, Never>))
        -> LaneStart
    {
        guard lifecycle == .running else { return .stop }
        for lane in lanes.indices where !lanes[lane].supervisorStarted {
            if let sequence = lanes[lane].sequence {
                lanes[lane].supervisorStarted = true
                return .start(sequence, lane: Int32(lane))
            }
        }
        return laneStartWaiters.park(waiting.id, waiting.continuation) ? .wait : .stop
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
        for waiter in clockSleeps.waiters.takeAll() { actions.stallWakes.append((waiter, [])) }
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

}

/// What stands in for every executor of a DataPoint that has stopped; nothing calls it.
private struct StoppedExecutor: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        .failed(reason: "the DataPoint has shut down")
    }
}
