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

    /// A registered sequence's bunch size and algorithm.
    func registeredConfiguration(
        _ name: CallSequence.Name
    ) throws(RelayError) -> (bunchSize: Int, algorithm: CallSequence.Algorithm) {
        let lane = try registeredLane(name)
        return (lanes[Int(lane)].bunchSize, lanes[Int(lane)].algorithm)
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
        switch algorithm.value {
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

}
