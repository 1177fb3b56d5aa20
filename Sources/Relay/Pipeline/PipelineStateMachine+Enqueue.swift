import Foundation

extension PipelineStateMachine {
    /// Applies one commit atomically: every operation is validated first, and a rejected commit changes nothing.
    ///
    /// Returns each operation's record, in call order, for its handle.
    ///
    /// `prebuilt` holds records made outside the lock for the snapshot the caller expected; they are used when that
    /// snapshot is the one this commit gets, so the critical section allocates nothing per operation. `preparation`
    /// holds what the caller worked out of the operations before taking the lock; without one, the commit works it
    /// out itself.
    @discardableResult
    mutating func enqueue(
        _ batch: [CallOperation],
        prebuilt: [OperationRecord] = [],
        preparation: CommitPreparation? = nil,
        now: Int64
    ) throws(RelayError) -> [OperationRecord] {
        switch lifecycle {
        case .stopping, .stopped:
            throw RelayError(.shutdown, "the DataPoint has shut down; nothing can be enqueued")
        case .idle, .running:
            break
        }
        let firstOrder = nextOrder
        var fresh: [Int32] = []
        fresh.reserveCapacity(batch.count)
        var edges = CommitEdges()
        let records: [OperationRecord]
        do {
            let snapshot = lastSnapshot + 1
            let usable = prebuilt.count == batch.count && prebuilt.first?.operation.snapshot == snapshot
            records = try allocate(
                batch, prebuilt: usable ? prebuilt : [],
                preparation: preparation ?? CommitPreparation(batch, limits: limits), firstOrder: firstOrder,
                now: now, into: &fresh, edges: &edges)
            try validateDependencies(of: fresh, edges: &edges, firstOrder: firstOrder)
        } catch {
            rollBack(fresh)
            throw error
        }
        guard !fresh.isEmpty else { return records }
        holdDispatch()
        commit(fresh, edges: edges, now: now)
        releaseDispatch()
        return records
    }

    /// Rejects what `preparation` found invalid and gives new operations a slot and an index entry, nothing more, so
    /// a rollback is cheap; looks up the dependencies of new ones into `edges`.
    ///
    /// Returns the commit's records in call order: the candidates themselves, with the known record in place of each
    /// operation that was already known, so that a commit of new operations copies no array of records.
    ///
    /// Operations are read through their records: binding each element of `batch` copied it, retaining every field,
    /// inside the lock.
    private mutating func allocate(
        _ batch: [CallOperation],
        prebuilt: [OperationRecord],
        preparation: CommitPreparation,
        firstOrder: UInt64,
        now: Int64,
        into fresh: inout [Int32],
        edges: inout CommitEdges
    ) throws(RelayError) -> [OperationRecord] {
        let snapshot = lastSnapshot + 1
        let candidates =
            prebuilt.isEmpty
            ? batch.map { operation in
                var stored = operation
                stored.snapshot = snapshot
                return OperationRecord(operation: stored)
            } : prebuilt
        index.reserve(batch.count)
        let hashes = preparation.hashes
        index.warm(hashes)
        // Commits usually name one sequence and one kind; look each up once.
        var lane: (name: CallSequence.Name, number: Int32)?
        var executor: (kind: CallKind, number: Int32)?
        var known: [(position: Int, record: OperationRecord)] = []
        var invalid = preparation.invalid[...]
        for (position, (record, hash)) in zip(candidates, hashes).enumerated() {
            let id = record.operation.id
            let bucket: Int
            let idHash: UInt32
            switch index.probe(id, hash: hash, holds: { slots[Int($0)].record.id == id }) {
            case .found(let knownSlot):
                guard slots[Int(knownSlot)].record.operation.hasSameContent(as: record.operation) else {
                    throw RelayError(
                        .conflictingOperation,
                        "operation \(id) is already known with different content",
                        operationIDs: [id]
                    )
                }
                known.append((position, slots[Int(knownSlot)].record))
                continue
            case .vacant(let vacant, let hash):
                bucket = vacant
                idHash = hash
            }
            while let skipped = invalid.first, skipped.position < position { invalid.removeFirst() }
            if let rejected = invalid.first, rejected.position == position { throw rejected.error }
            if lane?.name != record.operation.sequenceName {
                let name = record.operation.sequenceName
                guard let number = laneIndex[name], lanes[Int(number)].isRegistered else {
                    throw RelayError(
                        .unknownSequence,
                        "operation \(id) names sequence \(name), which is not registered",
                        operationIDs: [id]
                    )
                }
                lane = (name, number)
            }
            if executor?.kind != record.operation.kind {
                let kind = record.operation.kind
                guard let number = executorIndex[kind] else {
                    throw RelayError(
                        .unknownKind,
                        "no executor is registered for kind \(kind) of operation \(id)",
                        operationIDs: [id]
                    )
                }
                executor = (kind, number)
            }
            let number = allocateSlot(
                record: record,
                lane: lane?.number ?? 0,
                executor: executor?.number ?? -1,
                indexHash: idHash,
                order: firstOrder + UInt64(fresh.count),
                snapshot: snapshot,
                enqueuedAt: now
            )
            index.insert(number, hash: idHash, at: bucket)
            for dependency in record.operation.dependencies {
                edges.add(position: fresh.count, id: dependency, target: lookup(dependency))
            }
            fresh.append(number)
        }
        guard !known.isEmpty else { return candidates }
        var records = candidates
        for (position, record) in known { records[position] = record }
        return records
    }

    /// Every dependency must be known or in this commit, and the commit's new edges must not close a cycle.
    ///
    /// Known operations never depend on new ones, so a cycle can only run through this commit's operations. An edge
    /// that ``allocate(_:prebuilt:preparation:firstOrder:now:into:edges:)`` could not resolve points to a later
    /// operation of the commit; without one, the commit's own order rules a cycle out.
    private func validateDependencies(
        of fresh: [Int32],
        edges: inout CommitEdges,
        firstOrder: UInt64
    ) throws(RelayError) {
        var forwardEdges = false
        for (number, edge) in edges.edges.enumerated() {
            let dependent = fresh[Int(edge.position)]
            if edge.target == dependent {
                let id = slots[Int(dependent)].record.operation.id
                throw RelayError(.dependencyCycle, "operation \(id) depends on itself", operationIDs: [id])
            }
            guard edge.target == CommitEdges.unresolved else { continue }
            guard let target = lookup(edge.id) else {
                let id = slots[Int(dependent)].record.operation.id
                throw RelayError(
                    .unknownDependency,
                    "operation \(id) depends on \(edge.id), which is neither known nor in this commit",
                    operationIDs: [id, edge.id]
                )
            }
            edges.resolve(number, to: target)
            forwardEdges = true
        }
        guard forwardEdges else { return }
        if let cycle = findCycle(in: fresh, edges: edges, firstOrder: firstOrder) {
            let ids = cycle.map { slots[Int($0)].record.operation.id }
            throw RelayError(
                .dependencyCycle,
                "dependencies form a cycle: " + ids.map(\.uuidString).joined(separator: " → "),
                operationIDs: ids
            )
        }
    }

    /// Depth-first search over the commit's own edges, resolved already; returns one cycle in dependency order.
    private func findCycle(in fresh: [Int32], edges: CommitEdges, firstOrder: UInt64) -> [Int32]? {
        enum Mark: UInt8 {
            case unvisited
            case onPath
            case done
        }
        func position(_ slot: Int32) -> Int { Int(slots[Int(slot)].order - firstOrder) }
        // Each new operation's edges are contiguous, in the order of the operations.
        var firstEdge = [Int](repeating: edges.edges.count, count: fresh.count + 1)
        for (number, edge) in edges.edges.enumerated().reversed() { firstEdge[Int(edge.position)] = number }
        for position in stride(from: fresh.count - 1, through: 0, by: -1) {
            firstEdge[position] = min(firstEdge[position], firstEdge[position + 1])
        }
        func internalDependencies(_ slot: Int32) -> [Int32] {
            let p = position(slot)
            return edges.edges[firstEdge[p]..<firstEdge[p + 1]].lazy.map(\.target)
                .filter { slots[Int($0)].order >= firstOrder }
        }
        var marks = [Mark](repeating: .unvisited, count: fresh.count)
        var path: [(slot: Int32, next: [Int32])] = []
        for root in fresh where marks[position(root)] == .unvisited {
            marks[position(root)] = .onPath
            path.append((root, internalDependencies(root)))
            while !path.isEmpty {
                guard let target = path[path.count - 1].next.popLast() else {
                    marks[position(path.removeLast().slot)] = .done
                    continue
                }
                switch marks[position(target)] {
                case .done:
                    continue
                case .onPath:
                    let start = path.firstIndex { $0.slot == target } ?? 0
                    return path[start...].map(\.slot)
                case .unvisited:
                    marks[position(target)] = .onPath
                    path.append((target, internalDependencies(target)))
                }
            }
        }
        return nil
    }

    private mutating func rollBack(_ fresh: [Int32]) {
        for slot in fresh.reversed() {
            index.remove(hash: slots[Int(slot)].indexHash, slot: slot)
            vacate(slot)
        }
    }

    /// Wires the validated operations into the graph, records the commit, and releases what is ready.
    private mutating func commit(_ fresh: [Int32], edges: CommitEdges, now: Int64) {
        lastSnapshot += 1
        nextOrder += UInt64(fresh.count)
        let snapshot = lastSnapshot
        var cancellations: [(Int32, CallResult)] = []
        var committed: [CallOperation] = []
        if recording { committed.reserveCapacity(fresh.count) }
        let publishing = hub.isActive
        var edge = 0
        for (position, slot) in fresh.enumerated() {
            let s = Int(slot)
            if recording { committed.append(slots[s].record.operation) }
            let lane = Int(slots[s].lane)
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
                    operation: slots[s].record.operation.id,
                    sequence: slots[s].record.operation.sequenceName,
                    now: now
                )
            }
        }
        if recording { records.append(.commit(snapshot: snapshot, operations: committed, at: date(now))) }
        for (slot, result) in cancellations {
            finishTerminal(slot, result, now: now)
        }
        for slot in fresh {
            reevaluate(slot, now: now)
        }
    }

    /// Links an operation to its unfinished dependencies and counts them.
    ///
    /// Returns the cancellation it inherits when a dependency already ended `failed` or `cancelled` and it does not
    /// run anyway.
    mutating func wireDependencies(of slot: Int32) -> CallResult? {
        var blocker: CallResult?
        for dependency in slots[Int(slot)].record.operation.dependencies {
            guard let target = lookup(dependency) else { continue }
            wire(slot, to: target, id: dependency, blocker: &blocker)
        }
        return blocker
    }

    /// Links an operation to one dependency, or sets `blocker` to the cancellation it inherits from it.
    private mutating func wire(_ slot: Int32, to target: Int32, id dependency: UUID, blocker: inout CallResult?) {
        let s = Int(slot)
        let t = Int(target)
        guard slots[t].phase == .finished, let result = slots[t].result else {
            slots[t].addDependent(slot)
            slots[s].unfinishedDependencies += 1
            return
        }
        if blocker == nil, slots[s].record.operation.onDependencyFailure == .cancel,
            let reason = Self.cancellation(afterDependency: dependency, finished: result)
        {
            blocker = .cancelled(reason)
        }
    }

    /// Why a dependent is cancelled when its dependency ended with `result`, or `nil` when it may run.
    static func cancellation(afterDependency id: UUID, finished result: CallResult) -> CallCancellation? {
        switch result {
        case .completed, .skipped: nil
        case .failed: .dependencyFailed(id)
        case .cancelled: .dependencyCancelled(id)
        }
    }
}
