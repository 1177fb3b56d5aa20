import Foundation
import Synchronization

/// A subscriber's bounded buffer of events, filled by the event outbox once transitions are durable, and drained in
/// batches by its iterator.
///
/// When the buffer is full the oldest event is dropped, and the consumer receives a
/// ``CallEvent/Kind/dropped(_:)`` event in its place, numbered like the last dropped event, naming the operations
/// whose terminal event it lost.
final class EventSubscription: EventSink {
    /// What the iterator takes in one go: the transitions' batches, oldest first.
    struct Taken {
        var batches: [[CallEvent]] = []
        /// The batch whose leading events were dropped, and how many; the dropped notice comes before it.
        var trimmedBatch = 0
        var trimmed = 0
    }

    private struct State {
        /// The transitions' batches as they arrived, kept whole so that no event is copied on its way to the consumer.
        var batches = FIFOQueue<[CallEvent]>()
        /// How many leading events of the oldest batch were dropped.
        var trimmed = 0
        var count = 0
        var dropped = 0
        /// The operations whose terminal event was dropped, up to ``DroppedEvents/maximumFinished``.
        var droppedFinished: [UUID] = []
        var droppedFinishedOverflow = false
        var lastDropped: CallEvent?
        var waiters = Waiters<Void>()
        var wakeScheduled = false
        var closed = false
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// A stream ends as the DataPoint begins to stop, so that a consumer that a graceful shutdown waits for, such as a
    /// server's handler, is not held by it.
    var endsWhenStopping: Bool { true }

    func receive(_ events: [CallEvent]) -> EventDelivery {
        state.withLock { state in
            guard !state.closed, !events.isEmpty else { return EventDelivery(needsWake: false, dropped: 0) }
            state.batches.append(events)
            state.count += events.count
            let dropped = Self.dropOldest(state.count - capacity, from: &state)
            return EventDelivery(needsWake: scheduleWake(&state), dropped: dropped)
        }
    }

    /// Drops up to `excess` of the oldest events, remembering the newest of them to number the dropped notice.
    private static func dropOldest(_ excess: Int, from state: inout State) -> Int {
        guard excess > 0 else { return 0 }
        var remaining = excess
        while remaining > 0, let oldest = state.batches.first {
            let left = oldest.count - state.trimmed
            let end = left <= remaining ? oldest.count : state.trimmed + remaining
            noteFinished(in: oldest[state.trimmed..<end], into: &state)
            if left <= remaining {
                _ = state.batches.popFirst()
                state.lastDropped = oldest.last
                state.trimmed = 0
                remaining -= left
            } else {
                state.trimmed += remaining
                state.lastDropped = oldest[state.trimmed - 1]
                remaining = 0
            }
        }
        let dropped = excess - remaining
        state.count -= dropped
        state.dropped += dropped
        return dropped
    }

    /// Notes the operations whose terminal event is among `events`, which are being dropped.
    private static func noteFinished(in events: ArraySlice<CallEvent>, into state: inout State) {
        for event in events where event.kind.isTerminal {
            guard let id = event.operationID else { continue }
            guard state.droppedFinished.count < DroppedEvents.maximumFinished else {
                state.droppedFinishedOverflow = true
                return
            }
            state.droppedFinished.append(id)
        }
    }

    func close() -> Bool {
        state.withLock { state in
            state.closed = true
            return scheduleWake(&state)
        }
    }

    private func scheduleWake(_ state: inout State) -> Bool {
        guard !state.waiters.isEmpty, !state.wakeScheduled else { return false }
        state.wakeScheduled = true
        return true
    }

    func wake() {
        let waiters = state.withLock { state in
            state.wakeScheduled = false
            return state.waiters.takeAll()
        }
        for waiter in waiters { waiter.resume() }
    }

    private enum Take {
        case took
        case finished
        case empty
    }

    /// Moves every buffered batch into `taken`, waiting for at least one event.
    ///
    /// - Parameters:
    /// - Parameter taken: Receives the batches; its previous contents are discarded.
    /// - Returns: `false` once the stream has ended.
    func nextBatch(into taken: inout Taken) async -> Bool {
        while true {
            switch take(into: &taken) {
            case .took: return true
            case .finished: return false
            case .empty: break
            }
            if Task.isCancelled { return false }
            await Waiters<Void>.wait(
                cancelled: (),
                park: { id, continuation in
                    state.withLock { state in
                        guard state.count == 0, state.dropped == 0, !state.closed else { return () }
                        return state.waiters.park(id, continuation) ? nil : ()
                    }
                },
                cancel: { id in state.withLock { $0.waiters.cancel(id) } },
                forget: { id in state.withLock { $0.waiters.forget(id) } }
            )
        }
    }

    private func take(into taken: inout Taken) -> Take {
        state.withLock { state in
            guard state.count > 0 || state.dropped > 0 else { return state.closed ? .finished : .empty }
            taken.batches.removeAll(keepingCapacity: true)
            if state.dropped > 0, let last = state.lastDropped {
                let notice = CallEvent(
                    sequenceNumber: last.sequenceNumber,
                    date: last.date,
                    operationID: nil,
                    sequenceName: nil,
                    kind: .dropped(
                        DroppedEvents(
                            count: state.dropped, finished: state.droppedFinished,
                            namesEveryFinished: !state.droppedFinishedOverflow))
                )
                taken.batches.append([notice])
                state.dropped = 0
                state.droppedFinished = []
                state.droppedFinishedOverflow = false
                state.lastDropped = nil
            }
            taken.trimmedBatch = taken.batches.count
            taken.trimmed = state.trimmed
            state.batches.drain(into: &taken.batches)
            state.trimmed = 0
            state.count = 0
            return .took
        }
    }
}
