import Foundation

/// The subscribers of a pipeline and the numbering of its events; lives inside the pipeline's state.
///
/// A transition's events are gathered in the ``EventBatch`` it returns, and handed at its end to the ``EventOutbox``,
/// which delivers them to the subscribers once the transition is durable. Events for subscribers to everything go out
/// as one batch per transition, so a commit of a thousand operations costs each subscriber one lock, not a thousand.
struct EventHub: Sendable {
    private var everything: [(id: UInt64, sink: any EventSink)] = []
    private var perOperation: [UUID: [(id: UInt64, sink: any EventSink)]] = [:]
    /// Followers of the document's changes, by collection; `nil` follows every collection.
    private var perCollection: [String?: [(id: UInt64, sink: any EventSink)]] = [:]
    /// The last collection a change was published for, and its followers: a transaction's changes come in runs.
    private var lastCollection: (name: String, followers: [(id: UInt64, sink: any EventSink)])?
    private var nextSubscriberID: UInt64 = 1
    private(set) var nextSequenceNumber: UInt64 = 1
    /// The latest events, kept for subscribers that come back after a sequence number; a subscriber to everything.
    private(set) var history: EventHistory?

    /// Keeps the latest `capacity` events from now on; every event is then built, as for any subscriber.
    mutating func keepHistory(_ capacity: Int) {
        let history = EventHistory(capacity: capacity)
        self.history = history
        _ = subscribe(history, to: nil)
    }

    /// Subscribes `sink` to everything from now on, and owes it, before any later event, what it missed after
    /// `sequenceNumber`.
    mutating func subscribe(
        _ sink: any EventSink, after sequenceNumber: UInt64, date: Date, into batch: inout EventBatch
    ) -> UInt64 {
        flush(&batch)
        let catchUp = EventCatchUp(
            history: history, after: sequenceNumber, through: nextSequenceNumber - 1, date: date)
        batch.steps.append(.catchUp(sink, catchUp))
        return subscribe(sink, to: nil)
    }

    /// Whether any subscriber exists; when not, events are never built.
    var isActive: Bool { !everything.isEmpty || !perOperation.isEmpty || !perCollection.isEmpty }

    func hasSubscribers(for operationID: UUID?) -> Bool {
        if !everything.isEmpty { return true }
        guard let operationID, !perOperation.isEmpty else { return false }
        return perOperation[operationID] != nil
    }

    /// Whether a stream of one operation is open.
    var followsOperations: Bool { !perOperation.isEmpty }

    /// The operations a stream of one operation follows.
    var followedOperations: Dictionary<UUID, [(id: UInt64, sink: any EventSink)]>.Keys { perOperation.keys }

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

    /// Stops a follower of changes; an event of its own, so no change is gathered for it yet.
    mutating func unsubscribe(_ id: UInt64, fromCollection collection: String?) {
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
        }
    }

    /// Ends a subscriber's stream after the events gathered so far.
    func close(_ sink: any EventSink, in batch: inout EventBatch) {
        flush(&batch)
        batch.steps.append(.close(sink))
    }

    /// Numbers an event and gathers it in `batch` for every interested subscriber.
    mutating func publish(
        operationID: UUID?, sequenceName: CallSequence.Name?, kind: CallEvent.Kind, date: Date,
        into batch: inout EventBatch
    ) {
        let event = CallEvent(
            sequenceNumber: nextSequenceNumber,
            date: date,
            operationID: operationID,
            sequenceName: sequenceName,
            kind: kind
        )
        nextSequenceNumber += 1
        if !everything.isEmpty { batch.forEverything.append(event) }
        if !perCollection.isEmpty, let change = kind.change {
            for follower in followers(of: change.collection) {
                if let index = batch.changes.firstIndex(where: { $0.id == follower.id }) {
                    batch.changes[index].events.append(event)
                } else {
                    batch.changes.append((follower.id, follower.sink, [event]))
                }
            }
        }
        guard let operationID, !perOperation.isEmpty, let followers = perOperation[operationID] else { return }
        for follower in followers { batch.steps.append(.deliver(follower.sink, [event])) }
        if kind.isTerminal {
            perOperation[operationID] = nil
            for follower in followers { batch.steps.append(.close(follower.sink)) }
        }
    }

    /// Turns what `batch` gathered into one step per subscriber: for subscribers to everything, and for followers of
    /// collections; at the end of a transition, and before a close, which must come after them.
    func flush(_ batch: inout EventBatch) {
        if !batch.changes.isEmpty {
            for change in batch.changes { batch.steps.append(.deliver(change.sink, change.events)) }
            batch.changes.removeAll(keepingCapacity: true)
        }
        guard !batch.forEverything.isEmpty else { return }
        for subscriber in everything { batch.steps.append(.deliver(subscriber.sink, batch.forEverything)) }
        batch.forEverything = []
    }

    /// Ends the streams that end as the DataPoint begins to stop (see ``EventSink/endsWhenStopping``).
    mutating func closeStreamsEndingAtStop(in batch: inout EventBatch) {
        flush(&batch)
        for subscriber in everything where subscriber.sink.endsWhenStopping {
            batch.steps.append(.close(subscriber.sink))
        }
        everything.removeAll { $0.sink.endsWhenStopping }
        lastCollection = nil
        for sink in Self.removeEndingAtStop(from: &perOperation) + Self.removeEndingAtStop(from: &perCollection) {
            batch.steps.append(.close(sink))
        }
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
    mutating func closeAll(in batch: inout EventBatch) {
        flush(&batch)
        for subscriber in everything { batch.steps.append(.close(subscriber.sink)) }
        for follower in perOperation.values.joined() { batch.steps.append(.close(follower.sink)) }
        for follower in perCollection.values.joined() { batch.steps.append(.close(follower.sink)) }
        everything.removeAll()
        perOperation.removeAll()
        perCollection.removeAll()
        lastCollection = nil
    }
}
