import Foundation
import Relay
import Synchronization

/// Records every event of a DataPoint, without a consuming task, and lets a test wait for the ones it expects.
///
/// ```swift
/// let recorder = EventRecorder(point)
/// try await point.enqueue(operations)
/// let starts = await recorder.waitFor(3) { $0.kind.isStarted }
/// ```
///
/// - Important: The recorder keeps every event; it is meant for tests, not for long-running processes.
public final class EventRecorder: EventSink {
    private struct Waiter {
        let id: UInt64
        let count: Int
        let predicate: @Sendable (CallEvent) -> Bool
        var cursor = 0
        var matched: [CallEvent] = []
        let continuation: CheckedContinuation<[CallEvent], Never>
    }

    private struct State {
        var events: [CallEvent] = []
        var waiters: [Waiter] = []
        var wakeScheduled = false
        var closed = false
        var nextID: UInt64 = 1
        /// Waits whose task was cancelled before they parked; they end at once when they try.
        var cancelledEarly: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// Starts recording every event of the DataPoint from now on.
    ///
    /// - Parameter point: The DataPoint to observe.
    public init(_ point: DataPoint) {
        point.addEventSink(self)
    }

    /// Every event recorded so far, in sequence-number order.
    public var events: [CallEvent] { state.withLock(\.events) }

    /// The kinds of the events recorded for one operation, in order.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: The kinds.
    public func kinds(of id: UUID) -> [CallEvent.Kind] {
        state.withLock { $0.events.filter { $0.operationID == id }.map(\.kind) }
    }

    /// Waits until `count` recorded events match `predicate`, counting events recorded before the call too.
    ///
    /// - Parameters:
    ///   - count: How many matching events to wait for.
    ///   - predicate: Which events count; keep it quick and free of side effects.
    /// - Returns: The first `count` matching events, or fewer if the DataPoint shut down or the waiting task was
    ///   cancelled first.
    @discardableResult
    public func waitFor(_ count: Int = 1, where predicate: @escaping @Sendable (CallEvent) -> Bool) async
        -> [CallEvent]
    {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let matched = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[CallEvent], Never>) in
                let done = state.withLock { state -> [CallEvent]? in
                    var waiter = Waiter(id: id, count: count, predicate: predicate, continuation: continuation)
                    let cancelled = state.cancelledEarly.remove(id) != nil
                    if Self.advance(&waiter, over: state.events) || state.closed || cancelled { return waiter.matched }
                    state.waiters.append(waiter)
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Waiter? in
                if let index = state.waiters.firstIndex(where: { $0.id == id }) {
                    return state.waiters.remove(at: index)
                }
                state.cancelledEarly.insert(id)
                return nil
            }
            cancelled?.continuation.resume(returning: cancelled?.matched ?? [])
        }
        state.withLock { _ = $0.cancelledEarly.remove(id) }
        return matched
    }

    /// Waits until the operation's terminal event is recorded.
    ///
    /// - Parameter id: The operation's id.
    /// - Returns: The terminal event, or `nil` if the DataPoint shut down first.
    @discardableResult
    public func waitForTerminal(of id: UUID) async -> CallEvent? {
        await waitFor { $0.operationID == id && $0.kind.isTerminal }.first
    }

    private static func advance(_ waiter: inout Waiter, over events: [CallEvent]) -> Bool {
        while waiter.matched.count < waiter.count, waiter.cursor < events.count {
            let event = events[waiter.cursor]
            waiter.cursor += 1
            if waiter.predicate(event) { waiter.matched.append(event) }
        }
        return waiter.matched.count >= waiter.count
    }

    package func receive(_ events: [CallEvent]) -> EventDelivery {
        state.withLock { state in
            state.events.append(contentsOf: events)
            guard !state.waiters.isEmpty, !state.wakeScheduled else {
                return EventDelivery(needsWake: false, dropped: 0)
            }
            state.wakeScheduled = true
            return EventDelivery(needsWake: true, dropped: 0)
        }
    }

    package func close() -> Bool {
        state.withLock { state in
            state.closed = true
            return true
        }
    }

    package func wake() {
        let satisfied = state.withLock { state -> [(CheckedContinuation<[CallEvent], Never>, [CallEvent])] in
            state.wakeScheduled = false
            var satisfied: [(CheckedContinuation<[CallEvent], Never>, [CallEvent])] = []
            var remaining: [Waiter] = []
            for var waiter in state.waiters {
                if Self.advance(&waiter, over: state.events) || state.closed {
                    satisfied.append((waiter.continuation, waiter.matched))
                } else {
                    remaining.append(waiter)
                }
            }
            state.waiters = remaining
            return satisfied
        }
        for (continuation, matched) in satisfied { continuation.resume(returning: matched) }
    }
}
