/// Something that receives a DataPoint's events: a subscriber's stream, or a test recorder.
///
/// - Important: ``receive(_:)`` and ``close()`` are called under the event outbox's lock, once the transitions they
///   report are durable, so they must be quick and must not call back into the DataPoint. Anything slow, such as
///   resuming a waiting consumer, belongs in ``wake()``, which the outbox calls after releasing its lock.
package protocol EventSink: AnyObject, Sendable {
    /// Takes the events of one transition, oldest first; returns what the pipeline must do after releasing its lock.
    func receive(_ events: [CallEvent]) -> EventDelivery

    /// Ends the stream: no event follows. Returns whether ``wake()`` is needed.
    func close() -> Bool

    /// Resumes a consumer waiting for events, outside the outbox's lock.
    func wake()

    /// Whether the sink ends as soon as the DataPoint begins to shut down, rather than once it has stopped.
    var endsWhenStopping: Bool { get }
}

extension EventSink {
    package var endsWhenStopping: Bool { false }
}

/// What delivering events to a sink requires.
package struct EventDelivery: Sendable {
    /// The sink must be woken after the outbox's lock is released.
    package var needsWake: Bool
    /// How many older events the sink dropped to make room.
    package var dropped: Int

    package init(needsWake: Bool, dropped: Int) {
        self.needsWake = needsWake
        self.dropped = dropped
    }
}
