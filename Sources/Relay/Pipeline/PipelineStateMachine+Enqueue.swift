import Foundation

extension PipelineStateMachine {
    /// The state machine's half of a commit the directory admitted (``OperationDirectory/admit(_:preparation:)``).
    ///
    /// Checks what only the state knows, in commit order and before any error the directory found, then puts the new
    /// operations in their slots and wires them into the graph. Returns each operation's record, in call order.
    ///
    /// `prebuilt` holds records made outside the lock for the snapshot the caller expected; they are used when that
    /// snapshot is the one this commit gets, so the critical section allocates nothing per operation. On error
    /// nothing has changed here; the caller gives the admitted slots back to the directory.
    mutating func apply(
        _ admission: CommitAdmission,
        _ batch: [CallOperation],
        prebuilt: [OperationRecord],
        now: Int64,
        into actions: inout PipelineActions
    ) throws(RelayError) -> [OperationRecord] {
        switch lifecycle {
        case .stopping, .stopped:
            throw RelayError(.shutdown, "the DataPoint has shut down; nothing can be enqueued")
        case .idle, .running:
            break
        }
        let placements = try place(admission, batch)
        if let rejected = admission.rejected { throw rejected.error }
        if let error = admission.dependencyError { throw error }
        guard !admission.fresh.isEmpty else {
            return admission.known.map { graph[$0.slot].record }
        }
        try checkBacklog(adding: admission.fresh.count, bytes: admission.freshBytes)
        unfinishedCount += admission.fresh.count
        unfinishedBytes += admission.freshBytes
        let snapshot = graph.nextSnapshot
        let usable = prebuilt.count == batch.count && prebuilt.first?.operation.snapshot == snapshot
        let candidates = usable ? prebuilt : OperationRecord.records(for: batch, snapshot: snapshot)
        for (number, slot) in admission.fresh.enumerated() {
            graph.add(
                slot,
                record: candidates[Int(admission.positions[number])],
                lane: placements[number].lane,
                executor: placements[number].executor,
                offset: number,
                enqueuedAt: now
            )
        }
        holdDispatch()
        commit(admission.fresh, edges: admission.edges, now: now, into: &actions)
        releaseDispatch(into: &actions)
        guard !admission.known.isEmpty else { return candidates }
        var records = candidates
        for known in admission.known {
            records[known.position] = known.twin.map { candidates[$0] } ?? graph[known.slot].record
        }
        return records
    }

    /// Refuses a commit whose new operations would take the unfinished ones past the limits.
    func checkBacklog(adding count: Int, bytes: Int) throws(RelayError) {
        if unfinishedCount + count > limits.maximumPending {
            throw RelayError(
                .overloaded,
                "the DataPoint holds \(unfinishedCount) unfinished operations and this commit adds \(count); "
                    + "maximumPending is \(limits.maximumPending). Retry once some finish")
        }
        if unfinishedBytes + bytes > limits.maximumPendingBytes {
            throw RelayError(
                .overloaded,
                "the unfinished operations' payloads hold \(unfinishedBytes) bytes and this commit adds \(bytes); "
                    + "maximumPendingBytes is \(limits.maximumPendingBytes). Retry once some finish")
        }
    }

    /// Checks every operation before the first one the directory rejected, in commit order, and returns each new
    /// operation's lane and executor.
    ///
    /// A known operation must not differ from what it names, and a new one must name a registered sequence and kind.
    ///
    /// Operations are read in place: binding each element of `batch` copied it, retaining every field, inside the
    /// lock.
    func place(
        _ admission: CommitAdmission,
        _ batch: [CallOperation]
    ) throws(RelayError) -> [(lane: Int32, executor: Int32)] {
        var placements: [(lane: Int32, executor: Int32)] = []
        placements.reserveCapacity(admission.fresh.count)
        // Commits usually name one sequence and one kind; look each up once.
        var lane: (name: CallSequence.Name, number: Int32)?
        var executor: (kind: CallKind, number: Int32)?
        var known = admission.known[...]
        for position in 0..<(admission.rejected?.position ?? batch.count) {
            if let next = known.first, next.position == position {
                known.removeFirst()
                let existing = next.twin.map { batch[$0] } ?? graph[next.slot].record.operation
                guard existing.isSameWork(as: batch[position]) else {
                    let id = batch[position].id
                    throw RelayError(
                        .conflictingOperation,
                        "operation \(id) is already known with different content",
                        operationIDs: [id]
                    )
                }
                continue
            }
            if lane?.name != batch[position].sequenceName {
                let name = batch[position].sequenceName
                guard let number = laneIndex[name], lanes[Int(number)].isRegistered else {
                    let id = batch[position].id
                    throw RelayError(
                        .unknownSequence,
                        "operation \(id) names sequence \(name), which is not registered",
                        operationIDs: [id]
                    )
                }
                lane = (name, number)
            }
            let executorKind = Self.executorKind(of: batch[position])
            if executor?.kind != executorKind {
                let kind = executorKind
                guard let number = executorIndex[kind] else {
                    let id = batch[position].id
                    throw RelayError(
                        .unknownKind,
                        "no executor is registered for kind \(kind) of operation \(id)",
                        operationIDs: [id]
                    )
                }
                executor = (kind, number)
            }
            placements.append((lane?.number ?? 0, executor?.number ?? -1))
        }
        return placements
    }

    /// Records a transaction's model changes under the snapshot number of its commit: the one its operations took, or
    /// a number of their own when it enqueued none.
    mutating func commitModels(
        _ changes: [ModelChange], snapshotBefore: UInt64, now: Int64, into actions: inout PipelineActions
    ) {
        let snapshot = graph.lastSnapshot > snapshotBefore ? graph.lastSnapshot : graph.closeCommit(adding: 0)
        recordModels(changes, snapshot: snapshot, now: now, into: &actions)
    }

    /// Records model changes under `snapshot`, in this transition's frame, and publishes them to change streams.
    mutating func recordModels(
        _ changes: [ModelChange], snapshot: UInt64, now: Int64, into actions: inout PipelineActions
    ) {
        if recording {
            actions.records.append(StorageRecord(.models(snapshot: snapshot, changes: changes, at: date(now))))
        }
        publishModelChanges(changes, snapshot: snapshot, now: now, into: &actions)
    }

    /// Publishes model changes of `snapshot` to the change streams that follow their collections.
    mutating func publishModelChanges(
        _ changes: [ModelChange], snapshot: UInt64, now: Int64, into actions: inout PipelineActions
    ) {
        guard hub.isActive else { return }
        // A transaction's changes come in runs of one collection: ask once per run whether anyone follows it.
        var heard: (collection: String, heard: Bool)?
        for change in changes {
            if heard?.collection != change.collection {
                heard = (change.collection, hub.hasSubscribers(forCollection: change.collection))
            }
            guard heard?.heard == true else { continue }
            hub.publish(
                operationID: nil, sequenceName: nil,
                kind: .modelChanged(DocumentChange(snapshot: snapshot, change: change)),
                date: date(now), into: &actions.events)
        }
    }

    /// Wires the validated operations into the graph, records the commit, and releases what is ready.
    mutating func commit(_ fresh: [Int32], edges: CommitEdges, now: Int64, into actions: inout PipelineActions) {
        let snapshot = graph.closeCommit(adding: fresh.count)
        var cancellations: [(Int32, CallResult)] = []
        var committed: [CallOperation] = []
        if recording { committed.reserveCapacity(fresh.count) }
        let publishing = hub.isActive
        var edge = 0
        for (position, slot) in fresh.enumerated() {
            if recording { committed.append(graph[slot].record.operation) }
            let lane = Int(graph[slot].lane)
            lanes[lane].counts.pending += 1
            if lanes[lane].algorithm == .commitGraph { lanes[lane].openCommit(snapshot) }
            var blocker: CallResult?
            while edge < edges.edges.count, edges.edges[edge].position == position {
                wire(slot, to: edges.edges[edge].target, id: edges.edges[edge].id, blocker: &blocker)
                edge += 1
            }
            if let blocker { cancellations.append((slot, blocker)) }
            if publishing {
                publish(
                    .enqueued(snapshot: snapshot),
                    operation: graph[slot].record.operation.id,
                    sequence: graph[slot].record.operation.sequenceName,
                    now: now, into: &actions)
            }
        }
        if recording { actions.records.append(.commit(snapshot: snapshot, operations: committed, at: date(now))) }
        for (slot, result) in cancellations {
            finish(slot, result, now: now, into: &actions)
        }
        for slot in fresh {
            reevaluate(slot, now: now, into: &actions)
        }
    }

    /// Links an operation to its unfinished dependencies and counts them.
    ///
    /// Returns the cancellation it inherits when a dependency already ended `failed` or `cancelled` and it does not
    /// run anyway.
    mutating func wireDependencies(of slot: Int32, in directory: OperationDirectory) -> CallResult? {
        var blocker: CallResult?
        for dependency in graph[slot].record.operation.dependencies {
            guard let target = lookup(dependency, in: directory) else { continue }
            wire(slot, to: target, id: dependency, blocker: &blocker)
        }
        return blocker
    }

    /// Links an operation to one dependency, or sets `blocker` to the cancellation it inherits from it.
    mutating func wire(_ slot: Int32, to target: Int32, id dependency: UUID, blocker: inout CallResult?) {
        let ending = graph.link(slot, to: target)
        if blocker == nil, graph[slot].record.operation.onDependencyFailure == .cancel,
            let reason = Self.cancellation(afterDependency: dependency, ended: ending)
        {
            blocker = .cancelled(reason)
        }
    }

    /// Why a dependent is cancelled when its dependency ended with `result`, or `nil` when it may run.
    static func cancellation(afterDependency id: UUID, finished result: CallResult) -> CallCancellation? {
        cancellation(afterDependency: id, ended: OperationSlot.Ending(result))
    }

    /// ``cancellation(afterDependency:finished:)`` from how the dependency ended.
    static func cancellation(afterDependency id: UUID, ended ending: OperationSlot.Ending) -> CallCancellation? {
        switch ending {
        case .unfinished, .completed, .skipped: nil
        case .failed: .dependencyFailed(id)
        case .cancelled: .dependencyCancelled(id)
        }
    }
}
