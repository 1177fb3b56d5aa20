/// The events one transition gathers for its subscribers, returned with the transition's other actions and handed to
/// the ``EventOutbox`` at its end (see ``EventHub``).
struct EventBatch: Sendable {
    /// Events for the subscribers to everything, delivered to each as one batch.
    var forEverything: [CallEvent] = []
    /// The changes each follower of a collection has had, delivered to each as one batch.
    var changes: [(id: UInt64, sink: any EventSink, events: [CallEvent])] = []
    /// Steps for subscribers of one operation, and closes, in the order they arose.
    var steps: [EventOutbox.Step] = []

    var isEmpty: Bool { forEverything.isEmpty && changes.isEmpty && steps.isEmpty }
}
