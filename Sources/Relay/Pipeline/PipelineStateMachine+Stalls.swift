import Foundation

/// The operations whose executors sleep on a clock that reports its sleepers, and the waits that end when every
/// running operation does: a test's wait for idle, which a sleep on a manual clock would otherwise keep for ever.
struct ClockSleeps: Sendable {
    /// How many sleeps each running operation's attempt is in, by slot.
    private(set) var sleeping: [Int32: Int] = [:]
    /// Waits for the pipeline to be idle or stalled; they end with the stalled operations' ids, or none when idle.
    var waiters = Waiters<[UUID]>()

    /// Counts a sleep that begins, or one that ends.
    mutating func note(_ slot: Int32, began: Bool) {
        if began {
            sleeping[slot, default: 0] += 1
        } else if let count = sleeping[slot] {
            sleeping[slot] = count > 1 ? count - 1 : nil
        }
    }

    /// Forgets the sleeps of an attempt that ended; a sleep that outlives its attempt no longer counts.
    mutating func forget(_ slot: Int32) {
        if !sleeping.isEmpty { sleeping[slot] = nil }
    }
}

extension PipelineStateMachine {
    /// Notes that the executor of the operation in `slot` begins, or ends, a sleep on the clock.
    mutating func noteClockSleep(_ slot: Int32, began: Bool) {
        clockSleeps.note(slot, began: began)
    }

    /// The running operations, when every one of them sleeps on the clock and nothing more can start; `nil`
    /// otherwise.
    func stalledOperations(now: Int64) -> [UUID]? {
        guard runningTotal > 0, clockSleeps.sleeping.count >= runningTotal, isSettled(now: now) else { return nil }
        let stalled = clockSleeps.sleeping.keys.filter { graph[$0].phase == .running }
        guard stalled.count == runningTotal else { return nil }
        return stalled.sorted().map { graph[$0].record.operation.id }
    }

    /// Parks a wait until the pipeline is idle or stalled, or returns at once what it is: no ids when idle, the
    /// stalled operations' ids otherwise; an empty list too when the wait was cancelled or the pipeline stopped.
    mutating func waitUntilIdleOrStalled(
        now: Int64,
        id: UInt64,
        _ continuation: CheckedContinuation<[UUID], Never>
    ) -> [UUID]? {
        guard lifecycle != .stopped, !isIdle(now: now) else { return [] }
        if let stalled = stalledOperations(now: now) { return stalled }
        return clockSleeps.waiters.park(id, continuation) ? nil : []
    }

    /// Ends the waits for idle or stalled that the state satisfies; part of ``finish(_:now:)``.
    mutating func endStallWaits(now: Int64, into actions: inout PipelineActions) {
        if runningTotal == 0 {
            for waiter in clockSleeps.waiters.takeAll() { actions.stallWakes.append((waiter, [])) }
        } else if let stalled = stalledOperations(now: now) {
            for waiter in clockSleeps.waiters.takeAll() { actions.stallWakes.append((waiter, stalled)) }
        }
    }
}
