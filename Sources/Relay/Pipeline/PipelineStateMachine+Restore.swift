import Foundation

/// Restore: the state rebuilt from what a store holds, when the DataPoint opens.
extension PipelineStateMachine {

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
        restoreOperations(
            stored.operations, lastSnapshot: stored.lastSnapshot, clock: clock, directory: &directory, now: now,
            into: &actions)
        forgetBeyondBounds(into: &actions)
    }

    /// Adds operations a shared store claimed for this process to the graph, as a restore would.
    ///
    /// Each comes with its snapshot and its attempts so far, its dependencies satisfied (the store releases nothing
    /// before), ready to run. One the graph knows already is left as it is.
    ///
    /// - Returns: The results of those the graph knows as finished: they ran here, but the store did not record
    ///   their outcomes, and claimed them again.
    mutating func adopt(
        _ operations: [StoredOperation],
        clock: ClockSource,
        directory: inout OperationDirectory,
        now: Int64,
        into actions: inout PipelineActions
    ) -> [UUID: CallResult] {
        // An operation given back to the store and claimed here again must not be found in the slot it left: its id
        // leaves the directory now rather than after this transition.
        handOverRemoved(to: &directory, into: &actions)
        directory.releaseVacated()
        let lastSnapshot = operations.lazy.compactMap(\.operation.snapshot).max() ?? 0
        let known = restoreOperations(
            operations, lastSnapshot: lastSnapshot, clock: clock, directory: &directory, now: now, into: &actions)
        var finished: [UUID: CallResult] = [:]
        for id in known {
            guard let slot = lookup(id, in: directory) else { continue }
            if let result = result(of: slot) { finished[id] = result }
            // Claimed again while the attempt of a claim it lost still ends: that attempt ends under the new claim.
            if !abandoned.isEmpty { abandoned.remove(slot) }
        }
        forgetBeyondBounds(into: &actions)
        return finished
    }

    /// Adds stored operations to the graph, each in the phase the store left it, and moves the pending ones as far
    /// as they can go.
    ///
    /// - Returns: The ids of those the graph knew already, which it left as they were.
    @discardableResult
    private mutating func restoreOperations(
        _ operations: [StoredOperation],
        lastSnapshot: UInt64,
        clock: ClockSource,
        directory: inout OperationDirectory,
        now: Int64,
        into actions: inout PipelineActions
    ) -> [UUID] {
        var restored: [Int32] = []
        var known: [UUID] = []
        restored.reserveCapacity(operations.count)
        graph.reserve(restoring: operations.count, lastSnapshot: lastSnapshot, in: &directory)
        let records = OperationRecord.records(for: operations.lazy.map(\.operation), snapshot: nil)
        for (position, entry) in operations.enumerated() {
            guard
                let number = graph.restore(
                    records[position],
                    lane: placeholderLane(entry.operation.sequenceName),
                    executor: executorIndex[Self.executorKind(of: entry.operation)] ?? -1,
                    snapshot: entry.operation.snapshot ?? 0,
                    enqueuedAt: clock.time(of: entry.enqueuedAt),
                    in: &directory
                )
            else {
                known.append(entry.operation.id)
                continue
            }
            let record = records[position]
            let contexts = entry.holds.mapValues(clock.time(of:))
            graph[number].restore(
                attempts: Int32(clamping: entry.attempts),
                firstStartedAt: entry.firstStartedAt.map(clock.time(of:)) ?? OperationSlot.never,
                result: entry.result.map {
                    ($0, entry.finishedAt.map(clock.time(of:)) ?? now, entry.runTime.relayNanoseconds)
                }
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
            unfinishedCount += 1
            unfinishedBytes += graph[slot].record.operation.payload.count
            if lanes[l].algorithm == .commitGraph { lanes[l].openCommit(graph[slot].snapshot) }
        }
        retention.keep(restored: finished)
        if !finished.isEmpty { rearmTimers(into: &actions) }
        restoreLatencies(of: finished.sorted { $0.finishedAt < $1.finishedAt }.map(\.slot))
        var cancellations: [(Int32, CallResult)] = []
        for slot in restored where graph[slot].phase == .pending {
            if let blocker = wireDependencies(of: slot, in: directory) { cancellations.append((slot, blocker)) }
        }
        for (slot, result) in cancellations { finish(slot, result, now: now, into: &actions) }
        for slot in restored { reevaluate(slot, now: now, into: &actions) }
        return known
    }

    /// Refills the latency windows from the restored finished operations, oldest first, so that percentiles cover the
    /// last operations that finished, as they did before the restart; a store that kept no run time gives none.
    private mutating func restoreLatencies(of finishedInOrder: [Int32]) {
        for slot in finishedInOrder where graph[slot].firstStartedAt != OperationSlot.never {
            queueWaits.record(graph[slot].firstStartedAt - graph[slot].enqueuedAt)
            if graph[slot].runNanoseconds > 0 { runTimes.record(graph[slot].runNanoseconds) }
        }
    }
}
