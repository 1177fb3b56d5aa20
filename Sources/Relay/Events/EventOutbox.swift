import Synchronization

/// Holds each transition's events until the transition is durable, then hands them to the subscribers in the order the
/// transitions happened.
///
/// The pipeline posts a transition's events while it holds its lock, with the storage ticket the transition depends on,
/// so the queue keeps the transitions' order. Whoever learns that a ticket is durable delivers everything up to it:
/// a subscriber never sees an event whose transition a crash could still lose. Delivery runs under the outbox's own
/// lock, which keeps two deliverers from interleaving; waking the consumers happens after it.
final class EventOutbox: Sendable {
    /// What one transition asks of one subscriber.
    enum Step: Sendable {
        case deliver(any EventSink, [CallEvent])
        case close(any EventSink)
        /// A subscriber that came back after a sequence number is given what it missed, before any later event.
        case catchUp(any EventSink, EventCatchUp)
    }

    private struct State {
        var queue = FIFOQueue<(ticket: UInt64, steps: [Step])>()
        /// Every ticket up to this one is durable.
        var durableThrough: UInt64 = 0
        /// Storage failed: what was not durable never will be, so only closes are still performed.
        var failed = false
        var dropped = 0
    }

    private let state = Mutex(State())

    init() {}

    /// Events that subscribers' full buffers dropped.
    var droppedEvents: Int { state.withLock(\.dropped) }

    /// Queues a transition's steps behind every earlier transition's; called under the pipeline's lock.
    func post(_ steps: [Step], after ticket: StorageTicket) {
        guard !steps.isEmpty else { return }
        state.withLock { $0.queue.append((ticket.position, steps)) }
    }

    /// Delivers every queued transition up to `ticket`, which is durable, and up to any ticket known durable before;
    /// with `nil`, only the latter.
    func deliver(through ticket: StorageTicket?) {
        let wakes = state.withLock { state -> [any EventSink] in
            if let ticket { state.durableThrough = max(state.durableThrough, ticket.position) }
            var wakes: [any EventSink] = []
            while let next = state.queue.first, next.ticket <= state.durableThrough || state.failed {
                _ = state.queue.popFirst()
                Self.perform(next.steps, failed: state.failed, dropped: &state.dropped, wakes: &wakes)
            }
            return wakes
        }
        for sink in wakes { sink.wake() }
    }

    /// Delivers everything queued: the store has closed, so every transition that reached it is durable.
    func deliverAll() {
        deliver(through: StorageTicket(position: .max))
    }

    /// Storage could not make a transition durable: queued and later events are dropped, and streams still end.
    func fail() {
        state.withLock { $0.failed = true }
        deliver(through: nil)
    }

    private static func perform(_ steps: [Step], failed: Bool, dropped: inout Int, wakes: inout [any EventSink]) {
        for step in steps {
            switch step {
            case .deliver(let sink, let events):
                guard !failed else { continue }
                let delivery = sink.receive(events)
                dropped += delivery.dropped
                if delivery.needsWake { wakes.append(sink) }
            case .close(let sink):
                if sink.close() { wakes.append(sink) }
            case .catchUp(let sink, let catchUp):
                guard !failed else { continue }
                let delivery = sink.receive(catchUp.events())
                dropped += delivery.dropped
                if delivery.needsWake { wakes.append(sink) }
            }
        }
    }
}
