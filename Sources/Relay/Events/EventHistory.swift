import Foundation
import Synchronization

/// The latest events of a DataPoint, kept so that a subscriber that comes back after a sequence number misses nothing
/// they still hold (``DataPoint/events(after:bufferSize:)``).
///
/// It is a subscriber to everything whose buffer overwrites its oldest event, filled by the event outbox once each
/// transition is durable, like every other subscriber; a catch-up reads it at its own place in the outbox's order, so
/// that it sees every event published before its subscriber joined and none after.
final class EventHistory: EventSink {
    private struct Ring {
        var events: [CallEvent] = []
        /// Where the oldest event is, once the ring is full.
        var start = 0
    }

    private let ring = Mutex(Ring())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    func receive(_ events: [CallEvent]) -> EventDelivery {
        ring.withLock { ring in
            for event in events {
                if ring.events.count < capacity {
                    ring.events.append(event)
                } else {
                    ring.events[ring.start] = event
                    ring.start = (ring.start + 1) % capacity
                }
            }
        }
        return EventDelivery(needsWake: false, dropped: 0)
    }

    /// It outlives every stream: it ends with the DataPoint.
    func close() -> Bool { false }

    func wake() {}

    /// The events it holds numbered after `after`, up to `through`, oldest first.
    func events(after: UInt64, through: UInt64) -> [CallEvent] {
        ring.withLock { ring in
            let ordered = ring.events[ring.start...] + ring.events[..<ring.start]
            return ordered.filter { $0.sequenceNumber > after && $0.sequenceNumber <= through }
        }
    }
}

/// What a subscriber that comes back after a sequence number is owed: the events the history holds after it, up to
/// the last one numbered as it subscribed, and a notice of those it can no longer have.
struct EventCatchUp: Sendable {
    let history: EventHistory?
    /// The last number the subscriber saw.
    let after: UInt64
    /// The last number given as it subscribed; events after it reach the subscriber as they happen.
    let through: UInt64
    let date: Date

    /// The events to deliver first: a notice of what is missed, if anything is, then what the history holds.
    ///
    /// A number beyond the last given comes from an earlier run of the DataPoint, whose numbers start at 1 as it
    /// opens: everything held is replayed, after a notice that counts nothing and names no operation, so that the
    /// subscriber reads the current state for what it missed.
    func events() -> [CallEvent] {
        let fromEarlierRun = after > through
        let replayed = history?.events(after: fromEarlierRun ? 0 : after, through: through) ?? []
        let missed = fromEarlierRun ? 0 : Int(through - after) - replayed.count
        guard fromEarlierRun || missed > 0 else { return replayed }
        let notice = CallEvent(
            sequenceNumber: fromEarlierRun ? 0 : after + UInt64(missed),
            date: replayed.first?.date ?? date,
            operationID: nil,
            sequenceName: nil,
            kind: .dropped(DroppedEvents(count: missed, finished: [], namesEveryFinished: false))
        )
        return [notice] + replayed
    }
}
