import Foundation

/// The subscribers of a pipeline and the numbering of its events; lives inside the pipeline's state.
///
/// A transition's events are gathered here and taken at its end as steps for the ``EventOutbox``, which hands them to
/// the subscribers once the transition is durable. Events for subscribers to everything go out as one batch per
/// transition, so a commit of a thousand operations costs each subscriber one lock, not a thousand.
struct EventHub: Sendable {
    private var everything: [(id: UInt64, sink: any EventSink)] = []
    private var pending: [CallEvent] = []
    /// Steps for subscribers of one operation, and closes, in the order they arose.
    private var steps: [EventOutbox.Step] = []
    /// How many events the last transition gathered; the next batch starts with that much room.
    private var lastBatchSize = 0
    private var perOperation: [UUID: [(id: UInt64, sink: any EventSink)]] = [:]
    /// Followers of the document's changes, by collection; `nil` follows every collection.
    private var perCollection: [String?: [(id: UInt64, sink: any EventSink)]] = [:]
    /// The changes each follower of a collection has had in this transition, delivered as one batch each at its end.
    private var changeBatches: [(id: UInt64, sink: any EventSink, events: [CallEvent])] = []
    /// The last collection a change was published for, and its followers: a transaction's changes come in runs.
    private var lastCollection: (name: String, followers: [(id: UInt64, sink: any EventSink)])?
    private var nextSubscriberID: UInt64 = 1
    private(set) var nextSequenceNumber: UInt64 = 1

    /// Whether any subscriber exists; when not, events are never built.
    var isActive: Bool { !everything.isEmpty || !perOperation.isEmpty || !perCollection.isEmpty }

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

    /// Whether anyone hears of changes to `collection`.
    func hasSubscribers(forCollection collection: String) -> Bool {
        if !everything.isEmpty { return true }
        guard !perCollection.isEmpty else { return false }
        return perCollection[nil] != nil || perCollection[collection] != nil
    }

    /// The followers of `collection`'s changes, including those of every collection.
    private mutating func followers(of collection: String) -> [(id: UInt64, sink: any EventSink)] {
        if let last = lastCollection, last.name == collection { return last.followers }
        let followers = (perCollection[nil] ?? []) + (perCollection[collection] ?? [])
        lastCollection = (collection, followers)
        return followers
    }

    /// Follows the document's changes to `collection`, or to every collection when it is `nil`.
    mutating func subscribe(_ sink: any EventSink, toCollection collection: String?) -> UInt64 {
        let id = nextSubscriberID
        nextSubscriberID += 1
        perCollection[collection, default: []].append((id, sink))
        lastCollection = nil
        return id
    }

    mutating func unsubscribe(_ id: UInt64, fromCollection collection: String?) {
        flushChanges()
        lastCollection = nil
        perCollection[collection]?.removeAll { $0.id == id }
        if perCollection[collection]?.isEmpty == true { perCollection[collection] = nil }
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

    /// Ends a subscriber's stream after the events gathered so far.
    mutating func close(_ sink: any EventSink) {
        flushEverything()
        steps.append(.close(sink))
    }

    /// Numbers an event and gathers it for every interested subscriber.
    mutating func publish(operationID: UUID?, sequenceName: CallSequence.Name?, kind: CallEvent.Kind, date: Date) {
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
        if case .modelChanged(let change) = kind, !perCollection.isEmpty {
            for follower in followers(of: change.collection) {
                if let batch = changeBatches.firstIndex(where: { $0.id == follower.id }) {
                    changeBatches[batch].events.append(event)
                } else {
                    changeBatches.append((follower.id, follower.sink, [event]))
                }
            }
        }
        guard let operationID, !perOperation.isEmpty, let followers = perOperation[operationID] else { return }
        for follower in followers { steps.append(.deliver(follower.sink, [event])) }
        if kind.isTerminal {
            perOperation[operationID] = nil
            for follower in followers { steps.append(.close(follower.sink)) }
        }
    }

    /// The transition's steps, for the outbox; the hub starts the next transition empty.
    mutating func takeSteps() -> [EventOutbox.Step] {
        flushEverything()
        var taken: [EventOutbox.Step] = []
        swap(&taken, &steps)
        return taken
    }

    /// Turns the gathered batches into one step per subscriber: for subscribers to everything, and for followers of
    /// collections.
    private mutating func flushEverything() {
        flushChanges()
        guard !pending.isEmpty else { return }
        for subscriber in everything { steps.append(.deliver(subscriber.sink, pending)) }
        lastBatchSize = pending.count
        pending = []
    }

    private mutating func flushChanges() {
        guard !changeBatches.isEmpty else { return }
        for batch in changeBatches { steps.append(.deliver(batch.sink, batch.events)) }
        changeBatches.removeAll(keepingCapacity: true)
    }

    /// Ends the streams that end as the DataPoint begins to stop (see ``EventSink/endsWhenStopping``).
    mutating func closeStreamsEndingAtStop() {
        flushEverything()
        for subscriber in everything where subscriber.sink.endsWhenStopping { steps.append(.close(subscriber.sink)) }
        everything.removeAll { $0.sink.endsWhenStopping }
        lastCollection = nil
        for sink in Self.removeEndingAtStop(from: &perOperation) + Self.removeEndingAtStop(from: &perCollection) {
            steps.append(.close(sink))
        }
        if everything.isEmpty { pending.removeAll() }
    }

    /// Removes the followers whose streams end as the DataPoint begins to stop, and returns their sinks.
    private static func removeEndingAtStop<Topic>(
        from followers: inout [Topic: [(id: UInt64, sink: any EventSink)]]
    ) -> [any EventSink] {
        var ending: [any EventSink] = []
        for (topic, list) in followers {
            ending += list.filter { $0.sink.endsWhenStopping }.map(\.sink)
            let staying = list.filter { !$0.sink.endsWhenStopping }
            followers[topic] = staying.isEmpty ? nil : staying
        }
        return ending
    }

    /// Ends every stream, at shutdown.
    mutating func closeAll() {
        flushEverything()
        for subscriber in everything { steps.append(.close(subscriber.sink)) }
        for follower in perOperation.values.joined() { steps.append(.close(follower.sink)) }
        for follower in perCollection.values.joined() { steps.append(.close(follower.sink)) }
        everything.removeAll()
        perOperation.removeAll()
        perCollection.removeAll()
        lastCollection = nil
    }
}
