import Foundation
import Synchronization

/// A subscriber's bounded buffer of events, filled under the pipeline's lock and drained in batches by its iterator.
///
/// When the buffer is full the oldest event is dropped, and the consumer receives a
/// ``CallEvent/Kind/dropped(count:)`` event in its place, numbered like the last dropped event.
final class EventSubscription: EventSink {
    private struct State {
        var buffer = FIFOQueue<CallEvent>()
        var dropped = 0
        var lastDropped: CallEvent?
        var waiter: CheckedContinuation<Void, Never>?
        var wakeScheduled = false
        var closed = false
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    func receive(_ events: [CallEvent]) -> EventDelivery {
        state.withLock { state in
            guard !state.closed else { return EventDelivery(needsWake: false, dropped: 0) }
            var dropped = 0
            if state.buffer.count + events.count <= capacity {
                state.buffer.append(contentsOf: events)
            } else {
                for event in events {
                    if state.buffer.count >= capacity {
                        state.lastDropped = state.buffer.popFirst()
                        dropped += 1
                    }
                    state.buffer.append(event)
                }
            }
            state.dropped += dropped
            return EventDelivery(needsWake: scheduleWake(&state), dropped: dropped)
        }
    }

    func close() -> Bool {
        state.withLock { state in
            state.closed = true
            return scheduleWake(&state)
        }
    }

    private func scheduleWake(_ state: inout State) -> Bool {
        guard state.waiter != nil, !state.wakeScheduled else { return false }
        state.wakeScheduled = true
        return true
    }

    func wake() {
        let waiter = state.withLock { state in
            state.wakeScheduled = false
            return state.waiter.take()
        }
        waiter?.resume()
    }

    private enum Take {
        case took
        case finished
        case empty
    }

    /// Moves every buffered event into `batch`, waiting for at least one; returns `false` once the stream has ended.
    func nextBatch(into batch: inout [CallEvent]) async -> Bool {
        while true {
            switch take(into: &batch) {
            case .took: return true
            case .finished: return false
            case .empty: break
            }
            if Task.isCancelled { return false }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state in
                        if !state.buffer.isEmpty || state.dropped > 0 || state.closed || Task.isCancelled {
                            return true
                        }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiter.take() }?.resume()
            }
        }
    }

    private func take(into batch: inout [CallEvent]) -> Take {
        state.withLock { state in
            guard !state.buffer.isEmpty || state.dropped > 0 else { return state.closed ? .finished : .empty }
            batch.removeAll(keepingCapacity: true)
            if state.dropped > 0, let last = state.lastDropped {
                batch.append(
                    CallEvent(
                        sequenceNumber: last.sequenceNumber,
                        date: last.date,
                        operationID: nil,
                        sequenceName: nil,
                        kind: .dropped(count: state.dropped)
                    )
                )
                state.dropped = 0
                state.lastDropped = nil
            }
            state.buffer.drain(into: &batch)
            return .took
        }
    }
}
