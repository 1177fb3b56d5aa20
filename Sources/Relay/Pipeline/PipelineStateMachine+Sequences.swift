import Foundation

extension PipelineStateMachine {
    // MARK: - Sequences

    mutating func upsertLane(
        _ name: CallSequence.Name,
        sequence: CallSequence,
        bunchSize: Int,
        algorithm: CallSequence.Algorithm,
        addingSuspensions: Int,
        now: Int64,
        into actions: inout PipelineActions
    ) {
        let laneNumber: Int32
        if let existing = laneIndex[name] {
            laneNumber = existing
            let wasRegistered = lanes[Int(existing)].isRegistered
            if !wasRegistered { lanes[Int(existing)].sequence = sequence }
            lanes[Int(existing)].bunchSize = bunchSize
            setAlgorithm(algorithm, lane: existing, now: now, into: &actions)
            if !wasRegistered { actions.signals += laneStartWaiters.takeAll() }
        } else {
            laneNumber = Int32(lanes.count)
            lanes.append(Lane(name: name, sequence: sequence, bunchSize: bunchSize, algorithm: algorithm))
            laneIndex[name] = laneNumber
            actions.signals += laneStartWaiters.takeAll()
        }
        if recording { actions.records.append(.sequenceConfigured(name, bunchSize: bunchSize, algorithm: algorithm)) }
        for _ in 0..<max(0, addingSuspensions) {
            _ = suspend(lane: laneNumber, reason: "suspended before it was added", now: now, into: &actions)
        }
        dispatch(laneNumber, into: &actions)
    }

    /// Lets go of every lane's sequence actor, once the DataPoint that owns the pipeline is gone.
    mutating func releaseSequences() {
        for lane in lanes.indices { lanes[lane].sequence = nil }
    }

    /// Gives a lane its actor without changing a configuration restored from storage; creates it if needed.
    mutating func adoptLane(_ name: CallSequence.Name, sequence: CallSequence, into actions: inout PipelineActions) {
        if let existing = laneIndex[name] {
            guard lanes[Int(existing)].sequence == nil else { return }
            lanes[Int(existing)].sequence = sequence
            actions.signals += laneStartWaiters.takeAll()
            dispatch(existing, into: &actions)
            return
        }
        laneIndex[name] = Int32(lanes.count)
        lanes.append(Lane(name: name, sequence: sequence, bunchSize: 1, algorithm: .flat))
        if recording { actions.records.append(.sequenceConfigured(name, bunchSize: 1, algorithm: .flat)) }
        actions.signals += laneStartWaiters.takeAll()
    }

    /// A lane known only from stored operations, waiting for its sequence to be upserted.
    mutating func placeholderLane(_ name: CallSequence.Name) -> Int32 {
        if let existing = laneIndex[name] { return existing }
        let number = Int32(lanes.count)
        lanes.append(Lane(name: name, sequence: nil, bunchSize: 1, algorithm: .flat))
        laneIndex[name] = number
        return number
    }

    mutating func setBunchSize(
        _ size: Int, lane name: CallSequence.Name, now: Int64, into actions: inout PipelineActions
    ) throws(RelayError) {
        guard size >= 1 else {
            throw RelayError(.invalidBunchSize, "bunch size \(size) for sequence \(name) is below 1")
        }
        let lane = try registeredLane(name)
        // Claimed operations that have not begun would otherwise start beyond a lowered size.
        if size < lanes[Int(lane)].bunchSize { interruptBatches(lane: lane) }
        lanes[Int(lane)].bunchSize = size
        if recording {
            actions.records.append(.sequenceConfigured(name, bunchSize: size, algorithm: lanes[Int(lane)].algorithm))
        }
        dispatch(lane, into: &actions)
    }

    mutating func setAlgorithm(
        _ algorithm: CallSequence.Algorithm, lane name: CallSequence.Name, now: Int64,
        into actions: inout PipelineActions
    )
        throws(RelayError)
    {
        let lane = try registeredLane(name)
        setAlgorithm(algorithm, lane: lane, now: now, into: &actions)
        if recording {
            actions.records.append(
                .sequenceConfigured(name, bunchSize: lanes[Int(lane)].bunchSize, algorithm: algorithm))
        }
    }

    func registeredLane(_ name: CallSequence.Name) throws(RelayError) -> Int32 {
        guard let lane = laneIndex[name], lanes[Int(lane)].isRegistered else {
            throw RelayError(.unknownSequence, "no sequence named \(name) is registered")
        }
        return lane
    }

    mutating func setAlgorithm(
        _ algorithm: CallSequence.Algorithm, lane: Int32, now: Int64, into actions: inout PipelineActions
    ) {
        let l = Int(lane)
        guard lanes[l].algorithm != algorithm else { return }
        lanes[l].algorithm = algorithm
        switch algorithm {
        case .flat:
            let gated = lanes[l].gated.values.flatMap { $0 }
            lanes[l].gated.removeAll()
            lanes[l].resetCommitGraph()
            for slot in gated where graph[slot].gated {
                graph[slot].gated = false
                reevaluate(slot, now: now, into: &actions)
            }
        case .commitGraph:
            // A rare, explicit change, so one scan is fine: rebuild the per-commit accounting from the lane's
            // unfinished operations, and send ready operations of later commits back to wait for earlier ones.
            lanes[l].resetCommitGraph()
            let open = graph.unfinished.filter { graph[$0].lane == lane }.sorted { graph[$0].order < graph[$1].order }
            for s in open { lanes[l].openCommit(graph[s].snapshot) }
            let oldest = lanes[l].oldestOpenCommit
            for s in open where graph[s].phase == .ready && graph[s].snapshot != oldest {
                graph[s].phase = .pending
                graph[s].token &+= 1
                graph[s].gated = true
                lanes[l].readyCount -= 1
                lanes[l].gated[graph[s].snapshot, default: []].append(s)
            }
        }
    }

    // MARK: - Executors

    /// The kind whose executor runs `operation`: its own, or for an HTTP call enqueued where an authorizer would
    /// authorize it, one that has an authorizer (S18).
    static func executorKind(of operation: CallOperation) -> CallKind {
        operation.kind == .http && HTTPCall.requiresAuthorizer(operation.payload) ? .authorizedHTTP : operation.kind
    }

    mutating func register(
        _ executor: any CallExecutor, for kind: CallKind, now: Int64, into actions: inout PipelineActions
    ) {
        if kind == .http, (executor as? HTTPExecutor)?.authorizes == true {
            register(executor, for: .authorizedHTTP, now: now, into: &actions)
        }
        if let existing = executorIndex[kind] {
            executors[Int(existing)] = executor
            return
        }
        let number = Int32(executors.count)
        executors.append(executor)
        executorIndex[kind] = number
        guard let waiting = waitingForExecutor.removeValue(forKey: kind) else { return }
        for slot in waiting where graph[slot].executor < 0 {
            graph[slot].executor = number
            reevaluate(slot, now: now, into: &actions)
        }
    }

    // MARK: - Readiness

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
        guard lifecycle == .running, suspensionCount == 0 else { return }
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
        let starting = lifecycle == .running && suspensionCount == 0
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
