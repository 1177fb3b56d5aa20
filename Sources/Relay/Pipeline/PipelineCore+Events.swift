import Foundation

/// Subscriptions to the pipeline's events and to the document's changes.
extension PipelineCore {
    /// One operation's events from now on, or every event when `operationID` is `nil`.
    ///
    /// On a shared store, an operation the graph does not hold is followed when a handle here awaits it (another
    /// process runs it), and `ended` says that the caller's handle has its outcome already.
    func subscribe(to operationID: UUID?, ended: Bool = false, bufferSize: Int) throws(RelayError) -> CallEventStream {
        let subscription = EventSubscription(capacity: bufferSize)
        let elsewhere: RemoteOutcomes.Standing =
            if let operationID, shared != nil { remote.standing(of: operationID, ended: ended) } else { .unknown }
        let subscribed = try transitionWithDirectory { (machine, directory, actions) throws(RelayError) in
            try machine.subscribe(subscription, to: operationID, elsewhere: elsewhere, in: directory, into: &actions)
        }
        perform(subscribed)
        return stream(of: subscription, id: subscribed.value) { $0.unsubscribe($1, from: operationID) }
    }

    /// Every event from now on, after what the subscriber missed since `sequenceNumber`.
    func subscribe(after sequenceNumber: UInt64, bufferSize: Int) -> CallEventStream {
        let subscription = EventSubscription(capacity: bufferSize)
        let now = clock.now
        let subscribed = transition { $0.subscribe(subscription, after: sequenceNumber, now: now, into: &$1) }
        perform(subscribed)
        return stream(of: subscription, id: subscribed.value) { $0.unsubscribe($1, from: nil) }
    }

    /// A stream of the document's changes to `collection`, or to all of them when it is `nil`.
    func subscribe(toCollection collection: String?, bufferSize: Int) -> CallEventStream {
        let subscription = EventSubscription(capacity: bufferSize)
        let subscribed = transition { $0.subscribe(subscription, toCollection: collection, into: &$1) }
        perform(subscribed)
        return stream(of: subscription, id: subscribed.value) { $0.unsubscribe($1, fromCollection: collection) }
    }

    /// The stream of a subscription, which unsubscribes when the stream and its iterator are gone.
    private func stream(
        of subscription: EventSubscription, id: UInt64,
        unsubscribe: @escaping @Sendable (inout PipelineStateMachine, UInt64) -> Void
    ) -> CallEventStream {
        let lifetime = SubscriptionLifetime(subscription: subscription) { [weak self] in
            guard id != 0, let self else { return }
            self.apply { machine, _ in unsubscribe(&machine, id) }
        }
        return CallEventStream(lifetime: lifetime)
    }

    func addSink(_ sink: any EventSink) {
        let subscribed = try? transitionWithDirectory { (machine, directory, actions) throws(RelayError) in
            try machine.subscribe(sink, to: nil, in: directory, into: &actions)
        }
        if let subscribed { perform(subscribed) }
    }
}
