import Foundation

/// A subscriber's events, from ``DataPoint/events(bufferSize:)`` or ``DataPoint/events(for:bufferSize:)``.
///
/// Each stream has its own bounded buffer. Iterating drains it in batches, so delivery costs tens of nanoseconds per
/// event rather than a suspension per event. The stream ends when the DataPoint shuts down, or, for one operation's
/// events, after its terminal event. Dropping the stream and its iterator unsubscribes.
///
/// - Important: An event reaches the stream only once the transition it reports is durable under the store's policy,
///   and events arrive in the order the transitions happened: an event a subscriber sees survives a crash.
///
/// ```swift
/// let events = point.events()
/// for await event in events {
///     print(event.sequenceNumber, event.kind)
/// }
/// ```
///
/// - Important: Iterate a stream from one task at a time.
public struct CallEventStream: AsyncSequence, Sendable {
    /// The element type: one event.
    public typealias Element = CallEvent
    /// Iteration never throws; cancellation of the iterating task ends it.
    public typealias Failure = Never

    let lifetime: SubscriptionLifetime

    /// Creates the iterator.
    ///
    /// - Returns: An iterator over the subscriber's events.
    public func makeAsyncIterator() -> Iterator {
        Iterator(lifetime: lifetime)
    }

    /// Iterates a subscriber's events.
    public struct Iterator: AsyncIteratorProtocol {
        private let lifetime: SubscriptionLifetime
        private var taken = EventSubscription.Taken()
        private var nextBatch = 0
        private var batch: [CallEvent] = []
        private var index = 0

        init(lifetime: SubscriptionLifetime) {
            self.lifetime = lifetime
        }

        /// The next event, or `nil` once the stream has ended or the task is cancelled.
        ///
        /// - Returns: The next event.
        public mutating func next() async -> CallEvent? {
            while index == batch.count {
                batch = []
                if nextBatch == taken.batches.count {
                    nextBatch = 0
                    index = 0
                    guard await lifetime.subscription.nextBatch(into: &taken) else {
                        taken = EventSubscription.Taken()
                        return nil
                    }
                    continue
                }
                swap(&batch, &taken.batches[nextBatch])
                index = nextBatch == taken.trimmedBatch ? taken.trimmed : 0
                nextBatch += 1
            }
            defer { index += 1 }
            return batch[index]
        }
    }
}

/// Unsubscribes when the last stream or iterator referring to it goes away.
final class SubscriptionLifetime: Sendable {
    let subscription: EventSubscription
    private let cancel: @Sendable () -> Void

    init(subscription: EventSubscription, cancel: @escaping @Sendable () -> Void) {
        self.subscription = subscription
        self.cancel = cancel
    }

    deinit {
        cancel()
    }
}
