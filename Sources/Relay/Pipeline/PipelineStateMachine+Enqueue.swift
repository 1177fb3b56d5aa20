import Foundation

extension PipelineStateMachine {
    /// Applies one commit atomically: every operation is validated first, and a rejected commit changes nothing.
    mutating func enqueue(_ operations: [CallOperation], now: Int64) throws(RelayError) {
        switch lifecycle {
        case .stopping, .stopped:
            throw RelayError(.shutdown, "the DataPoint has shut down; nothing can be enqueued")
        case .idle, .running:
            break
        }
        let firstOrder = nextOrder
        var fresh: [Int32] = []
        fresh.reserveCapacity(operations.count)
        do {
            try allocate(operations, firstOrder: firstOrder, now: now, into: &fresh)
            try validateDependencies(of: fresh, firstOrder: firstOrder)
        } catch {
            rollBack(fresh)
            throw error
        }
        guard !fresh.isEmpty else { return }
        commit(fresh, now: now)
        evictExpired(now: now)
    }

    /// Validates each operation and gives new ones a slot and an index entry, nothing more, so a rollback is cheap.
    private mutating func allocate(
        _ operations: [CallOperation],
        firstOrder: UInt64,
        now: Int64,
        into fresh: inout [Int32]
    ) throws(RelayError) {
        let snapshot = lastSnapshot + 1
        for operation in operations {
            if let known = index[operation.id] {
                guard slots[Int(known)].operation.hasSameContent(as: operation) else {
                    throw RelayError(
                        .conflictingOperation,
                        "operation \(operation.id) is already known with different content",
                        operationIDs: [operation.id]
                    )
                }
                continue
            }
            try validate(operation)
            guard let lane = laneIndex[operation.sequenceName], lanes[Int(lane)].isRegistered else {
                throw RelayError(
                    .unknownSequence,
                    "operation \(operation.id) names sequence \(operation.sequenceName), which is not registered",
                    operationIDs: [operation.id]
                )
            }
            guard let executor = executorIndex[operation.kind] else {
                throw RelayError(
                    .unknownKind,
                    "no executor is registered for kind \(operation.kind) of operation \(operation.id)",
                    operationIDs: [operation.id]
                )
            }
            var stored = operation
            stored.snapshot = snapshot
            let slot = allocateSlot(
                OperationSlot(
                    operation: stored,
                    lane: lane,
                    executor: executor,
                    order: firstOrder + UInt64(fresh.count),
                    enqueuedAt: now
                )
            )
            index[operation.id] = slot
            fresh.append(slot)
        }
    }

    private func validate(_ operation: CallOperation) throws(RelayError) {
        if operation.payload.count > limits.maximumPayloadSize {
            throw RelayError(
                .payloadTooLarge,
                "payload of operation \(operation.id) is \(operation.payload.count) bytes; "
                    + "the limit is \(limits.maximumPayloadSize)",
                operationIDs: [operation.id]
            )
        }
        if let failure = operation.retryPolicy.validationFailure {
            throw RelayError(
                .invalidRetryPolicy,
                "retry policy of operation \(operation.id): \(failure)",
                operationIDs: [operation.id]
            )
        }
    }

    /// Every dependency must be known or in this commit, and the commit's new edges must not close a cycle.
    ///
    /// Known operations never depend on new ones, so a cycle can only run through this commit's operations.
    private func validateDependencies(of fresh: [Int32], firstOrder: UInt64) throws(RelayError) {
        var internalEdges = false
        for slot in fresh {
            let operation = slots[Int(slot)].operation
            for dependency in operation.dependencies {
                if dependency == operation.id {
                    throw RelayError(
                        .dependencyCycle,
                        "operation \(operation.id) depends on itself",
                        operationIDs: [operation.id]
                    )
                }
                guard let target = index[dependency] else {
                    throw RelayError(
                        .unknownDependency,
                        "operation \(operation.id) depends on \(dependency), which is neither known nor in this commit",
                        operationIDs: [operation.id, dependency]
                    )
                }
                if slots[Int(target)].order >= firstOrder { internalEdges = true }
            }
        }
        guard internalEdges else { return }
        if let cycle = findCycle(in: fresh, firstOrder: firstOrder) {
            let ids = cycle.map { slots[Int($0)].operation.id }
            throw RelayError(
                .dependencyCycle,
                "dependencies form a cycle: " + ids.map(\.uuidString).joined(separator: " → "),
                operationIDs: ids
            )
        }
    }

    /// Depth-first search over the commit's own edges; returns one cycle in dependency order.
    private func findCycle(in fresh: [Int32], firstOrder: UInt64) -> [Int32]? {
        enum Mark: UInt8 {
            case unvisited
            case onPath
            case done
        }
        func position(_ slot: Int32) -> Int { Int(slots[Int(slot)].order - firstOrder) }
        func internalDependencies(_ slot: Int32) -> [Int32] {
            slots[Int(slot)].operation.dependencies.compactMap { id in
                guard let target = index[id], slots[Int(target)].order >= firstOrder else { return nil }
                return target
            }
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
            index[slots[Int(slot)].operation.id] = nil
            vacate(slot)
        }
    }

    /// Wires the validated operations into the graph, records the commit, and releases what is ready.
    private mutating func commit(_ fresh: [Int32], now: Int64) {
        lastSnapshot += 1
        nextOrder += UInt64(fresh.count)
        let snapshot = lastSnapshot
        var cancellations: [(Int32, CallResult)] = []
        var committed: [CallOperation] = []
        committed.reserveCapacity(fresh.count)
        let publishing = hub.isActive
        for slot in fresh {
            let s = Int(slot)
            committed.append(slots[s].operation)
            let lane = Int(slots[s].lane)
            lanes[lane].counts.pending += 1
            if lanes[lane].algorithm == .commitGraph { lanes[lane].openCommit(snapshot) }
            if let blocker = wireDependencies(of: slot) { cancellations.append((slot, blocker)) }
            if publishing {
                publish(
                    .enqueued(snapshot: snapshot),
                    operation: slots[s].operation.id,
                    sequence: slots[s].operation.sequenceName,
                    now: now
                )
            }
        }
        records.append(.commit(snapshot: snapshot, operations: committed, at: date(now)))
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
        let s = Int(slot)
        var blocker: CallResult?
        for dependency in slots[s].operation.dependencies {
            guard let target = index[dependency] else { continue }
            let t = Int(target)
            guard slots[t].phase == .finished, let result = slots[t].result else {
                slots[t].dependents.append(slot)
                slots[s].unfinishedDependencies += 1
                continue
            }
            if blocker == nil, slots[s].operation.onDependencyFailure == .cancel,
                let reason = Self.cancellation(afterDependency: dependency, finished: result)
            {
                blocker = .cancelled(reason)
            }
        }
        return blocker
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
