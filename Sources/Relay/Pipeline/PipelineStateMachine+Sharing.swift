import Foundation

/// A DataPoint on a shared store runs only what the store claimed for it, and lets go of an operation that the fleet
/// is to run elsewhere: one whose retry waits, and one whose claim the store lost.
extension PipelineStateMachine {
    /// Gives an operation back to the shared store, without an outcome.
    ///
    /// One whose retry waits, whose sequence's slot the store frees fleet-wide meanwhile, for whichever process claims
    /// it once its time comes; or one whose claim the store lost. Its handles here wait for the store's report.
    ///
    /// The slot leaves at once (an id looked up finds nothing, so the store answers for it), and is vacated by the
    /// next transition that holds the directory.
    mutating func handToStore(_ slot: Int32, now: Int64, into actions: inout PipelineActions) {
        let l = Int(graph[slot].lane)
        if graph[slot].phase == .ready { lanes[l].readyCount -= 1 }
        lanes[l].counts.pending -= 1
        unfinishedCount -= 1
        unfinishedBytes -= graph[slot].record.operation.payload.count
        leaveOffline(slot, lane: l, now: now, into: &actions)
        if lanes[l].algorithm == .commitGraph {
            commitFinished(graph[slot].snapshot, lane: l, now: now, into: &actions)
        }
        actions.handedToStore.append(graph[slot].record)
        if !abandoned.isEmpty { abandoned.remove(slot) }
        timers.forget(slot)
        if !reports.isEmpty { reports[slot] = nil }
        if !lastFailures.isEmpty { lastFailures[slot] = nil }
        graph[slot].leave()
        graph.remove(slot)
    }

    /// Stops running here the operations whose claims the shared store lost: their leases expired, and the fleet runs
    /// them elsewhere.
    ///
    /// One that waits leaves at once; a running one's task is cancelled, and it leaves when its attempt ends, whatever
    /// the attempt returns. Neither records anything: the store no longer takes this process's word for them.
    mutating func abandon(
        _ ids: [UUID], in directory: OperationDirectory, now: Int64, into actions: inout PipelineActions
    ) {
        for id in ids {
            guard let slot = lookup(id, in: directory) else { continue }
            switch graph[slot].phase {
            case .pending, .ready:
                handToStore(slot, now: now, into: &actions)
            case .running:
                guard abandoned.insert(slot).inserted else { continue }
                cancelRunning(slot, into: &actions)
            case .finished, .free:
                continue
            }
        }
    }
}
