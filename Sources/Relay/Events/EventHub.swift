import Foundation

/// The subscribers of a pipeline and the numbering of its events; lives inside the pipeline's state.
///
/// Events for subscribers to everything are gathered during a transition and handed over in one batch at its end,
/// so a commit of a thousand operations costs each subscriber one lock, not a thousand.
struct EventHub: Sendable {
    private var everything: [(id: UInt64, sink: any EventSink)] = []
    private var pending: [CallEvent] = []
    /// How many events the last transition gathered; the next batch starts with that much room.
    private var lastBatchSize = 0
    private var perOperation: [UUID: [(id: UInt64, sink: any EventSink)]] = [:]
    private var nextSubscriberID: UInt64 = 1
    private(set) var nextSequenceNumber: UInt64 = 1
    private(set) var droppedEvents = 0

    /// Whether any subscriber exists; when not, events are never built.
    var isActive: Bool { !everything.isEmpty || !perOperation.isEmpty }

    func hasSubscribers(for operationID: UUID?) -> Bool {
        if !everything.isEmpty { return true }
        guard let operationID, !perOperation.isEmpty else { return false }
        return perOperation[operationID] != nil
    }

    mutating func subscribe(_ sink: any EventSink, to operationID: UUID?) -> UInt64 {
        let id = nextSubscriberID
        nextSubscriberID += 1
        if let operationID {
            perOperation[operationID, default: []].append((id, sink))
        } else {
            everything.append((id, sink))
        }
        return id
    }

    mutating func unsubscribe(_ id: UInt64, from operationID: UUID?) {
        if let operationID {
            perOperation[operationID]?.removeAll { $0.id == id }
            if perOperation[operationID]?.isEmpty == true { perOperation[operationID] = nil }
        } else {
            everything.removeAll { $0.id == id }
            if everything.isEmpty { pending.removeAll() }
        }
    }

    /// Numbers an event and hands it to every interested sink; sinks to wake are appended to `wakes`.
    mutating func publish(
        operationID: UUID?,
        sequenceName: CallSequence.Name?,
        kind: CallEvent.Kind,
        date: Date,
        wakes: inout [any EventSink]
    ) {
        let event = CallEvent(
            sequenceNumber: nextSequenceNumber,
            date: date,
            operationID: operationID,
            sequenceName: sequenceName,
            kind: kind
        )
        nextSequenceNumber += 1
        if !everything.isEmpty {
            if pending.isEmpty && lastBatchSize > 16 { pending.reserveCapacity(lastBatchSize) }
            pending.append(event)
        }
        guard let operationID, !perOperation.isEmpty, let followers = perOperation[operationID] else { return }
        for follower in followers {
            deliver([event], to: follower.sink, wakes: &wakes)
        }
        if kind.isTerminal {
            perOperation[operationID] = nil
            for follower in followers where follower.sink.close() {
                wakes.append(follower.sink)
            }
        }
    }

    /// Hands the transition's gathered events to every subscriber of everything; called before the lock is released.
    mutating func flush(wakes: inout [any EventSink]) {
        guard !pending.isEmpty else { return }
        // Subscribers keep the array itself; the next events go into one a subscriber has emptied, if any.
        var next: [CallEvent] = []
        for subscriber in everything {
            let spare = deliver(pending, to: subscriber.sink, wakes: &wakes)
            if spare.capacity > next.capacity { next = spare }
        }
        lastBatchSize = pending.count
        pending = next
    }

    @discardableResult
    private mutating func deliver(
        _ events: [CallEvent],
        to sink: any EventSink,
        wakes: inout [any EventSink]
    ) -> [CallEvent] {
        let delivery = sink.receive(events)
        droppedEvents += delivery.dropped
        if delivery.needsWake { wakes.append(sink) }
        return delivery.spare
    }

    /// Ends every stream, at shutdown.
    mutating func closeAll(wakes: inout [any EventSink]) {
        flush(wakes: &wakes)
        for subscriber in everything where subscriber.sink.close() {
            wakes.append(subscriber.sink)
        }
        for followers in perOperation.values {
            for follower in followers where follower.sink.close() {
                wakes.append(follower.sink)
            }
        }
        everything.removeAll()
        perOperation.removeAll()
    }
}
