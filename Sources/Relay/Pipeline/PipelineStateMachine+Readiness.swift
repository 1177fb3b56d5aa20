import Foundation

/// Readiness: whether an operation may start, its lane's ready queue and the dispatch of wakes to workers, and
/// whether the pipeline is settled or idle.
extension PipelineStateMachine {

    /// Moves a pending operation as far as it can go: to a timer, a commit gate, or its ready queue.
    mutating func reevaluate(_ slot: Int32, now: Int64, into actions: inout PipelineActions) {
        guard graph[slot].phase == .pending, graph[slot].unfinishedDependencies == 0, !graph[slot].gated else { return }
        if !lanes[Int(graph[slot].lane)].offline.isEmpty, lanes[Int(graph[slot].lane)].offline.isWaiting(slot) {
            reevaluateWhileOffline(slot, lane: Int(graph[slot].lane), now: now, into: &actions)
            return
        }
        let notBefore = notBefore(slot)
        if notBefore > now {
            wake(slot, at: notBefore, into: &actions)
            return
        }
        if graph[slot].executor < 0 {
            let kind = Self.executorKind(of: graph[slot].record.operation)
            guard let executor = executorIndex[kind] else {
                waitingForExecutor[kind, default: []].append(slot)
                return
            }
            graph[slot].executor = executor
        }
        let lane = graph[slot].lane
        let l = Int(lane)
        if lanes[l].algorithm == .commitGraph, let oldest = lanes[l].oldestOpenCommit, graph[slot].snapshot != oldest {
            graph[slot].gated = true
            lanes[l].gated[graph[slot].snapshot, default: []].append(slot)
            return
        }
        graph[slot].phase = .ready
        graph[slot].token &+= 1
        lanes[l].ready.push(
            .init(order: graph[slot].order, slot: slot, token: graph[slot].token),
            priority: graph[slot].record.operation.priority
        )
        lanes[l].readyCount += 1
        dispatch(lane, into: &actions)
    }

    /// Wakes idle workers, or asks for new ones, for ready work that the bunch size leaves room for.
    mutating func dispatch(_ lane: Int32, into actions: inout PipelineActions) {
        if holdingDispatch {
            if !lanes[Int(lane)].dispatchHeld {
                lanes[Int(lane)].dispatchHeld = true
                heldDispatches.append(lane)
            }
            return
        }
        guard lifecycle == .running, suspensionCount == 0, storeFailure == nil else { return }
        let l = Int(lane)
        guard lanes[l].isRegistered, lanes[l].suspensionCount == 0 else { return }
        var demand = lanes[l].readyCount + lanes[l].offline.dueProbes - lanes[l].wakesInFlight
        var capacity = lanes[l].bunchSize - lanes[l].running - lanes[l].wakesInFlight
        while demand > 0 && capacity > 0 {
            if let idle = lanes[l].idleWorkers.takeLast() {
                actions.workerWakes.append((idle, .work))
            } else if lanes[l].workers < lanes[l].bunchSize {
                lanes[l].workers += 1
                lanes[l].pendingSpawns += 1
                for spawner in lanes[l].spawnWaiters.takeAll() { actions.spawnWakes.append((spawner, true)) }
            } else {
                break
            }
            lanes[l].wakesInFlight += 1
            demand -= 1
            capacity -= 1
        }
    }

    /// Holds dispatches until ``releaseDispatch()``: a step that readies many operations, or a worker about to take
    /// one of them itself, then dispatches each lane once, at the end, rather than once per operation.
    mutating func holdDispatch() {
        holdingDispatch = true
    }

    mutating func releaseDispatch(into actions: inout PipelineActions) {
        holdingDispatch = false
        guard !heldDispatches.isEmpty else { return }
        for lane in heldDispatches {
            lanes[Int(lane)].dispatchHeld = false
            dispatch(lane, into: &actions)
        }
        heldDispatches.removeAll(keepingCapacity: true)
    }

    mutating func dispatchAll(into actions: inout PipelineActions) {
        for lane in lanes.indices { dispatch(Int32(lane), into: &actions) }
    }

    /// Nothing more can start without outside input, though operations may still run.
    ///
    /// A hold or a retry that has ended at `now` is such input only until the timer loop fires it, so the pipeline is
    /// not settled while one is due, nor while a sweep of finished operations is.
    func isSettled(now: Int64) -> Bool {
        if lifecycle == .running, let sweep = nextSweep, sweep <= now { return false }
        let starting = lifecycle == .running && suspensionCount == 0 && storeFailure == nil
        if starting, timers.hasWakeup(dueAt: now) { return false }
        return !lanes.contains { lane in
            guard lane.wakesInFlight == 0, !lane.offline.isProbing else { return true }
            guard starting, lane.isRegistered, lane.suspensionCount == 0 else { return false }
            return (lane.readyCount > 0 || lane.offline.dueProbes > 0) && lane.running < lane.bunchSize
        }
    }

    /// Nothing runs and nothing more can start without outside input.
    func isIdle(now: Int64) -> Bool { runningTotal == 0 && isSettled(now: now) }
}
