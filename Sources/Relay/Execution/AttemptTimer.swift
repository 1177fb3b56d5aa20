import Synchronization

/// Keeps the deadlines of running attempts (``CallContext/withTimeout(_:_:)``) on one loop on the DataPoint's clock,
/// so that an attempt costs a heap entry, not a sleeping task.
///
/// Its lock guards ``AttemptDeadlines`` and is never held with another: an attempt arms and disarms its deadline
/// without the pipeline's lock, which every worker contends for. A deadline that passes reaches the pipeline once this
/// lock is let go, through the loop's `expire`.
final class AttemptTimer: Sendable {
    private let deadlines = Mutex(AttemptDeadlines())
    private let clock: ClockSource

    init(clock: ClockSource) {
        self.clock = clock
    }

    /// Runs `body` under a deadline `timeout` from now; returns `nil` when the deadline cut it short.
    func run<Value>(
        _ timeout: Duration, for attempt: AttemptDeadlines.Attempt, _ body: () async throws -> Value
    ) async throws -> Value? {
        let (deadline, overflow) = clock.now.addingReportingOverflow(max(timeout, .zero).relayNanoseconds)
        let (outer, signals) = deadlines.withLock { $0.arm(attempt, at: overflow ? .max : deadline) }
        for signal in signals { signal.resume() }
        let value: Value
        do {
            value = try await body()
        } catch {
            // Whatever the body threw once its deadline passed, it threw because the deadline cancelled it.
            if disarm(attempt.slot, restoring: outer) { return nil }
            throw error
        }
        _ = disarm(attempt.slot, restoring: outer)
        return value
    }

    /// Whether the deadline passed.
    private func disarm(_ slot: Int32, restoring outer: AttemptDeadlines.Armed?) -> Bool {
        let (fired, signals) = deadlines.withLock { $0.disarm(slot, restoring: outer) }
        for signal in signals { signal.resume() }
        return fired
    }

    /// Fires deadlines as they pass, handing the attempts they cut short to `expire`, until ``close()`` or
    /// cancellation.
    func runLoop(expire: ([AttemptDeadlines.Attempt]) -> Void) async {
        while !Task.isCancelled {
            let plan = deadlines.withLock { $0.plan() }
            guard await clock.follow(plan, waitForRearm: waitForRearm), !Task.isCancelled else { return }
            let now = clock.now
            let due = deadlines.withLock { $0.fire(now: now) }
            if !due.isEmpty { expire(due) }
        }
    }

    /// Ends the loop once the engine has stopped.
    func close() {
        for signal in deadlines.withLock({ $0.close() }) { signal.resume() }
    }

    @Sendable private func waitForRearm(_ generation: UInt64) async {
        await Waiters<Void>.wait(
            cancelled: (),
            park: { id, continuation in
                deadlines.withLock { $0.park(generation: generation, id: id, continuation) } ? nil : ()
            },
            cancel: { id in self.deadlines.withLock { $0.cancelWait(id) } },
            forget: { id in deadlines.withLock { $0.forgetWait(id) } }
        )
    }
}
