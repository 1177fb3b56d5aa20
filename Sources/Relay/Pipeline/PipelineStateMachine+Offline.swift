import Foundation

/// Destinations that cannot be reached (S9): the operations that wait for them, their probes, and the limits on
/// waiting. The lane's ``OfflineDestinations`` keeps the state; this is where it meets the rest of the machine.
extension PipelineStateMachine {
    /// The operation's destination could not be reached.
    ///
    /// The attempt is given back and the operation waits for its destination; the lane's other destinations go on.
    /// Past the free rounds, the attempt is spent instead. On a shared store, the operation goes back to the store,
    /// which keeps the destination offline for every process and probes it (see ``SharedStorage``).
    mutating func goOffline(
        _ slot: Int32, lane l: Int, reason: String, response: CallResponse?, now: Int64,
        into actions: inout PipelineActions
    ) {
        if graph[slot].cancelRequested {
            finish(slot, .cancelled(.requested), now: now, into: &actions)
            return
        }
        if sharing {
            handOfflineToStore(slot, lane: l, now: now, into: &actions)
            return
        }
        let strikes = lanes[l].offline.strikes(of: slot)
        guard strikes < OfflineDestinations.freeRounds else {
            let counted =
                "\(reason) (its destination answered \(strikes) probes while its calls failed before a response)"
            retryOrFail(slot, reason: counted, requestedDelay: nil, response: response, now: now, into: &actions)
            return
        }
        graph[slot].attempts -= 1
        let operation = graph[slot].record.operation
        if recording {
            actions.records.append(.attemptReturned(operation.id, attempts: Int(graph[slot].attempts), sent: true))
        }
        park(slot, lane: l, at: operation.destination, reason: reason, now: now, into: &actions)
        reevaluate(slot, now: now, into: &actions)
    }

    /// Gives an operation whose destination did not answer back to the shared store, its attempt uncounted: it waits
    /// there without its sequence's slot, so that the sequence's other destinations go on in every process, until a
    /// probe of its destination answers; past its retry policy's `maximumElapsed` since its first attempt, it fails.
    private mutating func handOfflineToStore(
        _ slot: Int32, lane l: Int, now: Int64, into actions: inout PipelineActions
    ) {
        if let (end, limit) = elapsedLimit(of: slot), end <= now {
            failOffline(slot, lane: l, limit: limit, now: now, into: &actions)
            return
        }
        graph[slot].attempts -= 1
        if recording {
            let id = graph[slot].record.operation.id
            actions.records.append(.attemptReturned(id, attempts: Int(graph[slot].attempts), sent: true))
        }
        handToStore(slot, now: now, into: &actions)
    }

    /// A ready operation about to start whose destination is offline waits for it instead, unstarted; returns whether
    /// it does.
    mutating func parkIfDestinationIsOffline(
        _ slot: Int32, lane l: Int, now: Int64, into actions: inout PipelineActions
    ) -> Bool {
        let destination = graph[slot].record.operation.destination
        guard lanes[l].offline.isOffline(destination) else { return false }
        graph[slot].phase = .pending
        lanes[l].readyCount -= 1
        park(slot, lane: l, at: destination, reason: "", now: now, into: &actions)
        reevaluate(slot, now: now, into: &actions)
        return true
    }

    private mutating func park(
        _ slot: Int32, lane l: Int, at destination: String, reason: String, now: Int64,
        into actions: inout PipelineActions
    ) {
        let executor = executors[Int(graph[slot].executor)]
        guard lanes[l].offline.park(slot, at: destination, reason: reason, executor: executor, now: now) else { return }
        publish(
            .offline(destination: destination, reason: reason), operation: nil, sequence: lanes[l].name, now: now,
            into: &actions)
        // The lane's batches stop, so that operations claimed for this destination wait rather than fail in turn.
        interruptBatches(lane: Int32(l))
    }

    /// Re-evaluates an operation that waits for its destination: it fails once its retry policy's `maximumElapsed`
    /// has passed since its first attempt; if its destination's probe sends it, the probe falls due at its time.
    mutating func reevaluateWhileOffline(_ slot: Int32, lane l: Int, now: Int64, into actions: inout PipelineActions) {
        var wakeAt = Int64.max
        if let (end, limit) = elapsedLimit(of: slot) {
            if end <= now {
                failOffline(slot, lane: l, limit: limit, now: now, into: &actions)
                return
            }
            wakeAt = end
        }
        if let probeAt = lanes[l].offline.nextProbe(sending: slot) {
            if probeAt <= now {
                lanes[l].offline.probeFellDue(sending: slot)
                dispatch(Int32(l), into: &actions)
            } else {
                wakeAt = min(wakeAt, probeAt)
            }
        }
        if wakeAt != .max { wake(slot, at: wakeAt, into: &actions) }
    }

    /// When the operation's retry policy's `maximumElapsed` since its first attempt has passed, with that limit;
    /// `nil` when it has none, or has not started.
    private func elapsedLimit(of slot: Int32) -> (end: Int64, limit: Duration)? {
        guard let limit = graph[slot].record.operation.retryPolicy.maximumElapsed,
            graph[slot].firstStartedAt != OperationSlot.never
        else { return nil }
        let (end, overflow) = graph[slot].firstStartedAt.addingReportingOverflow(limit.relayNanoseconds)
        return overflow ? nil : (end, limit)
    }

    private mutating func failOffline(
        _ slot: Int32, lane l: Int, limit: Duration, now: Int64, into actions: inout PipelineActions
    ) {
        let reason = lanes[l].offline.reason(of: slot)?.reason ?? graph[slot].record.operation.destination
        let failure = CallFailure(
            reason: "offline past its maximum elapsed time of \(limit.readable): \(reason)",
            attempts: Int(graph[slot].attempts), cause: .offlineTooLong)
        finish(slot, .failed(failure), now: now, into: &actions)
    }

    /// A probe ended: on an answer, the operations that waited may start again.
    mutating func probeEnded(
        destination: String, lane: Int32, worker: UInt64, answered: Bool, now: Int64,
        into actions: inout PipelineActions
    ) {
        let l = Int(lane)
        switch lanes[l].offline.probeEnded(destination, by: worker, answered: answered, now: now) {
        case .online(let released):
            publish(
                .online(destination: destination, reason: "it answered a probe"), operation: nil,
                sequence: lanes[l].name, now: now, into: &actions)
            holdDispatch()
            for slot in released { reevaluate(slot, now: now, into: &actions) }
            releaseDispatch(into: &actions)
        case .offline(let subject):
            // Its next probe, or its maximum elapsed time if that comes first.
            reevaluate(subject, now: now, into: &actions)
        case .forgotten:
            break
        }
    }

    /// An operation ended: it waits for its destination no more, and when it was the last that did, the destination
    /// is forgotten until an operation finds it offline again.
    mutating func leaveOffline(_ slot: Int32, lane l: Int, now: Int64, into actions: inout PipelineActions) {
        let (emptied, nextSubject) = lanes[l].offline.leave(slot)
        if let nextSubject { reevaluate(nextSubject, now: now, into: &actions) }
        guard let emptied else { return }
        publish(
            .online(destination: emptied, reason: "no operation waits for it any more; the next one tries again"),
            operation: nil, sequence: lanes[l].name, now: now, into: &actions)
    }
}

extension CallOperation {
    /// Where the operation's calls go, as offline tracking tells destinations apart: an HTTP call's scheme, host and
    /// port, as in `https://api.example.com:443`, and for other kinds the kind.
    ///
    /// A shared store keeps it with the operation, so that no process claims an operation whose destination is
    /// offline.
    public var destination: String {
        guard kind == .http, let call = try? decodedHTTPCall() else { return kind.rawValue }
        return call.url.origin
    }
}
