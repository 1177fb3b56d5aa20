import Foundation

extension PipelineStateMachine {
    // MARK: - Workers

    /// Parks the lane supervisor's wait for spawn requests, or returns its answer at once.
    mutating func waitForSpawnRequest(lane: Int32, id: UInt64, _ continuation: CheckedContinuation<Bool, Never>)
        -> Bool?
    {
        let l = Int(lane)
        guard lifecycle == .running else { return false }
        if lanes[l].pendingSpawns > 0 { return true }
        return lanes[l].spawnWaiters.park(id, continuation) ? nil : false
    }

    /// Creates the worker for one pending spawn request of the lane.
    mutating func takeSpawn(lane: Int32) -> UInt64? {
        let l = Int(lane)
        guard lifecycle == .running, lanes[l].pendingSpawns > 0 else { return nil }
        lanes[l].pendingSpawns -= 1
        let worker = nextWorkerID
        nextWorkerID += 1
        workers[worker] = WorkerState(lane: lane)
        return worker
    }

    /// The batch a worker's loop shares with the pipeline, from its spawn until it exits.
    func batch(of worker: UInt64) -> WorkerBatch? {
        workers[worker]?.batch
    }

    /// A worker's step, in one transition (see ``OperationClaims``).
    ///
    /// The worker takes the next ready operations of its lane itself, so dispatch waits until it has claimed them: a
    /// dependent that the finish made ready, as in a chain, then runs on this worker, and the bunch's room that its
    /// claims fill wakes no idle worker that would find nothing left and park again. `claimWake` tells that the worker
    /// was woken or spawned for work and now claims that wake.
    mutating func workerStep(
        _ worker: UInt64,
        lane: Int32,
        ended ends: [EndedAttempt],
        claimWake: Bool,
        cancelled: Bool,
        limit: Int,
        batch: WorkerBatch,
        claimed jobs: inout [Job],
        now: Int64,
        into actions: inout PipelineActions
    ) -> NextJob {
        holdDispatch()
        for ended in ends { finishAttempt(ended.slot, worker: worker, end: ended.end, now: now, into: &actions) }
        let next = nextJob(
            lane: lane, worker: worker, claimWake: claimWake, cancelled: cancelled, now: now, into: &actions)
        if limit > 1, let first = next.slot, hasRoomToClaim(in: lane) {
            claimMore(
                after: first, lane: lane, worker: worker, batch: batch, limit: limit - 1, now: now, into: &jobs,
                into: &actions)
        }
        releaseDispatch(into: &actions)
        return next
    }

    /// Whether the lane has ready operations and room in its bunch: a lane of one, or a full one, then skips the call
    /// to claim more after every operation.
    @inline(__always)
    private func hasRoomToClaim(in lane: Int32) -> Bool {
        let l = Int(lane)
        return lanes[l].readyCount > 0 && lanes[l].running < lanes[l].bunchSize
    }

    /// Claims up to `limit` more ready operations of the lane for a worker that was just given `first`, within the
    /// bunch size and in start order, and starts them.
    ///
    /// The worker runs them one after another and reports their ends in one transition; `batch`, the one its
    /// ``WorkerState`` holds, lets the pipeline interrupt the batch in between (see ``WorkerBatch``). The worker
    /// passes it in, so that claiming reads nothing of the worker's state.
    private mutating func claimMore(
        after first: Int32,
        lane: Int32,
        worker: UInt64,
        batch: WorkerBatch,
        limit: Int,
        now: Int64,
        into jobs: inout [Job],
        into actions: inout PipelineActions
    ) {
        let l = Int(lane)
        let start = jobs.count
        while jobs.count - start < limit, lanes[l].running < lanes[l].bunchSize,
            let entry = lanes[l].ready.popFirst()
        {
            guard graph[entry.slot].phase == .ready, graph[entry.slot].token == entry.token else { continue }
            if !lanes[l].offline.isEmpty, parkIfDestinationIsOffline(entry.slot, lane: l, now: now, into: &actions) {
                continue
            }
            let batchIndex = UInt8(jobs.count - start + 1)
            jobs.append(
                self.start(entry.slot, lane: l, worker: worker, now: now, batchIndex: batchIndex, into: &actions))
        }
        guard jobs.count > start else { return }
        batch.reset()
        graph[first].batchIndex = 0
    }

    /// The worker's next job: run an operation, park until there is work, or exit.
    private mutating func nextJob(
        lane: Int32, worker: UInt64, claimWake: Bool, cancelled: Bool, now: Int64, into actions: inout PipelineActions
    ) -> NextJob {
        let l = Int(lane)
        if claimWake { lanes[l].wakesInFlight -= 1 }
        guard lifecycle == .running, !cancelled else { return exit(worker, into: &actions) }
        if doomedWorkers > 0, workers[worker]?.doomed == true { return exit(worker, into: &actions) }
        if lanes[l].workers > lanes[l].bunchSize { return exit(worker, into: &actions) }
        guard suspensionCount == 0, lanes[l].suspensionCount == 0, storeFailure == nil else { return .park }
        if lanes[l].offline.dueProbes > 0, let probe = lanes[l].offline.takeDueProbe(for: worker) {
            return .probe(probe.executor, graph[probe.slot].record.operation, destination: probe.destination)
        }
        guard lanes[l].running < lanes[l].bunchSize else { return .park }
        while let entry = lanes[l].ready.popFirst() {
            guard graph[entry.slot].phase == .ready, graph[entry.slot].token == entry.token else { continue }
            if !lanes[l].offline.isEmpty, parkIfDestinationIsOffline(entry.slot, lane: l, now: now, into: &actions) {
                continue
            }
            return .run(start(entry.slot, lane: l, worker: worker, now: now, into: &actions))
        }
        return .park
    }

    /// Starts an attempt and hands it to `worker`.
    ///
    /// The store records every start, so that a crash counts the attempt. Subscribers hear of an operation claimed
    /// behind another in a batch (`batchIndex` from 1) only once its worker reports that it ran: one it gives back
    /// never started, as far as they can tell (see ``finishAttempt(_:worker:end:now:)``).
    mutating func start(
        _ slot: Int32,
        lane l: Int,
        worker: UInt64,
        now: Int64,
        batchIndex: UInt8 = OperationSlot.unbatched,
        into actions: inout PipelineActions
    ) -> Job {
        let attempt = graph[slot].beginAttempt(worker: worker, batchIndex: batchIndex, now: now)
        lanes[l].countStart()
        runningTotal += 1
        if recording || hub.isActive {
            let id = graph[slot].record.operation.id
            if recording { actions.records.append(.started(id, attempt: attempt, at: date(now))) }
            if batchIndex == OperationSlot.unbatched {
                publish(.started(attempt: attempt), operation: id, sequence: lanes[l].name, now: now, into: &actions)
            }
        }
        return Job(
            slot: slot,
            record: graph[slot].record,
            executor: executors[Int(graph[slot].executor)],
            attempt: attempt,
            startedAt: now
        )
    }

    /// Parks an idle worker, or returns how to resume it at once when its wait is already over.
    mutating func park(
        lane: Int32,
        worker: UInt64,
        id: UInt64,
        _ continuation: CheckedContinuation<WorkerWake, Never>,
        into actions: inout PipelineActions
    ) -> WorkerWake? {
        let l = Int(lane)
        guard lifecycle == .running, workers[worker]?.doomed != true else { return .recheck }
        guard lanes[l].idleWorkers.park(id, continuation) else { return .recheck }
        // Work may have arrived between the decision to park and this registration.
        dispatch(lane, into: &actions)
        return nil
    }

    mutating func exit(_ worker: UInt64, into actions: inout PipelineActions) -> NextJob {
        workerExited(worker, claimWake: false, into: &actions)
        return .exit
    }

    /// Forgets a worker; idempotent.
    ///
    /// `claimWake` releases a wake it was given but never claimed.
    mutating func workerExited(_ worker: UInt64, claimWake: Bool, into actions: inout PipelineActions) {
        guard var state = workers.removeValue(forKey: worker) else { return }
        let l = Int(state.lane)
        if claimWake { lanes[l].wakesInFlight -= 1 }
        lanes[l].workers -= 1
        if state.doomed { doomedWorkers -= 1 }
        actions.signals += state.cancelWaiters.takeAll()
        if lifecycle == .running {
            dispatch(state.lane, into: &actions)
        } else if workers.isEmpty {
            rearmTimers(into: &actions)
        }
    }
}
