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

    /// Publishes events that happened in other processes of the fleet, to those who follow them here.
    ///
    /// An operation claimed here was announced as enqueued by its claim, if its enqueued event had not arrived yet,
    /// and one enqueued here by its commit's answer: the event that arrives later is passed over. One whose commit
    /// here has not answered yet is announced from the log, before its start elsewhere. With no stream of every event
    /// open, nothing is published, and what was noted for ordering is forgotten.
    mutating func publish(_ events: [SharedEvent], into actions: inout PipelineActions) {
        guard followsEveryEvent else {
            enqueueAnnouncements = SharedEnqueueAnnouncements()
            // Streams of one operation that another process runs hear of it all the same, from their start on: an
            // operation followed here was enqueued before its stream opened.
            for event in events {
                guard let id = event.operationID, !event.kind.isEnqueued, hub.hasSubscribers(for: id) else { continue }
                hub.publish(
                    operationID: id, sequenceName: event.sequenceName, kind: event.kind, date: event.date,
                    into: &actions.events)
            }
            return
        }
        for event in events {
            if let id = event.operationID, event.kind.isEnqueued {
                // One of this process's commits, read from the log before the commit answered here.
                enqueuesInFlight.remove(id)
                guard enqueueAnnouncements.logged(id) else { continue }
            } else if let id = event.operationID, event.kind.isStarted || event.kind.isTerminal {
                enqueueAnnouncements.started(id)
            }
            hub.publish(
                operationID: event.operationID, sequenceName: event.sequenceName, kind: event.kind, date: event.date,
                into: &actions.events)
        }
    }

    /// Whether a stream of every event is open.
    var followsEveryEvent: Bool { hub.hasSubscribers(for: nil) }

    /// Whether any stream needs other processes' events: one of every event, or one of an operation.
    var followsSharedEvents: Bool { followsEveryEvent || hub.followsOperations }

    /// The operations that a stream of one operation follows here while the graph does not hold them: another
    /// process runs them.
    func followedElsewhere(in directory: OperationDirectory) -> [UUID] {
        guard hub.followsOperations else { return [] }
        return hub.followedOperations.filter { lookup($0, in: directory) == nil }
    }

    /// Notes operations whose commit to the shared store is under way.
    mutating func beginSharedCommit(_ ids: [UUID]) {
        enqueuesInFlight.formUnion(ids)
    }

    /// Ends a commit to the shared store: announces as enqueued those of `operations` that the store named, unless a
    /// claim here did first; with no snapshot, the commit failed and nothing is announced.
    mutating func endSharedCommit(
        _ operations: [CallOperation], snapshot: UInt64?, announced: Set<UUID>, now: Int64,
        into actions: inout PipelineActions
    ) {
        for operation in operations where enqueuesInFlight.remove(operation.id) != nil {
            guard let snapshot, announced.contains(operation.id) else { continue }
            announceEnqueued(operation, snapshot: snapshot, now: now, into: &actions)
        }
    }

    /// Announces as enqueued, before they start, the claimed operations whose enqueued event no one announced here
    /// yet: those whose commit here has not answered, and, while a stream of every event is open, first claims of
    /// operations whose event the store's log has not brought yet.
    mutating func announceClaimed(_ claimed: [StoredOperation], now: Int64, into actions: inout PipelineActions) {
        guard !enqueuesInFlight.isEmpty || followsEveryEvent else { return }
        for stored in claimed {
            let operation = stored.operation
            let inFlight = enqueuesInFlight.remove(operation.id) != nil
            guard inFlight || (followsEveryEvent && stored.attempts == 0) else { continue }
            if followsEveryEvent, !enqueueAnnouncements.claimed(operation.id) { continue }
            publish(
                .enqueued(snapshot: operation.snapshot ?? 0), operation: operation.id,
                sequence: operation.sequenceName, now: now, into: &actions)
        }
    }

    private mutating func announceEnqueued(
        _ operation: CallOperation, snapshot: UInt64, now: Int64, into actions: inout PipelineActions
    ) {
        if followsEveryEvent { enqueueAnnouncements.announced(operation.id) }
        publish(
            .enqueued(snapshot: snapshot), operation: operation.id, sequence: operation.sequenceName, now: now,
            into: &actions)
    }
}
