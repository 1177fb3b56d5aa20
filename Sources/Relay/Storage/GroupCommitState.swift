/// The state of a ``GroupCommit``: the batch being gathered, how far the log is durable, and who waits for what.
///
/// Each event returns what the caller must do once the lock is let go: resume continuations, start a drain, or run
/// the closing work.
struct GroupCommitState<Batch: Sendable, Waiter: Sendable>: Sendable {
    enum WaitAction {
        case resume(Result<Void, RelayError>)
        case startDrain
        case none
    }

    private let empty: Batch
    private var batch: Batch
    private var isOpen = true
    private(set) var appended: UInt64 = 0
    /// How far the writer has been handed batches; ahead of `durable` while a written batch waits for its sync.
    private var taken: UInt64 = 0
    private var durable: UInt64 = 0
    /// Whether a drain is queued or running.
    private var draining = false
    /// Drains and exclusive work queued or running.
    private var work = 0
    private var waiters: [(position: UInt64, waiter: Waiter)] = []
    private(set) var failure: RelayError?
    /// What to run once no work is queued or running, after ``close(failure:whenIdle:)``.
    private var whenIdle: (@Sendable () -> Void)?

    init(empty: Batch) {
        self.empty = empty
        batch = empty
    }

    mutating func append(transitions: Int, _ add: (inout Batch) -> Void) -> UInt64 {
        guard isOpen else { return appended }
        add(&batch)
        appended += UInt64(transitions)
        return appended
    }

    /// How a wait for `position` ends without waiting, if it does.
    func settled(_ position: UInt64) -> Result<Void, RelayError>? {
        if durable >= position { return .success(()) }
        if let failure { return .failure(failure) }
        return nil
    }

    mutating func wait(for position: UInt64, _ waiter: Waiter) -> WaitAction {
        if let settled = settled(position) { return .resume(settled) }
        waiters.append((position, waiter))
        guard !draining else { return .none }
        draining = true
        work += 1
        return .startDrain
    }

    /// The next batch to write and the position it makes durable; `nil` ends the drain.
    ///
    /// It may be taken while the batch before it waits for its sync, so that its write runs beside that sync.
    mutating func nextRound() -> (batch: Batch, target: UInt64)? {
        guard isOpen, failure == nil, appended > taken else {
            draining = false
            return nil
        }
        defer { batch = empty }
        taken = appended
        return (batch, appended)
    }

    /// Marks the log durable through `target` and returns the waiters that are done.
    mutating func wrote(through target: UInt64) -> [Waiter] {
        durable = max(durable, target)
        var done: [Waiter] = []
        waiters.removeAll { waiter in
            guard waiter.position <= durable else { return false }
            done.append(waiter.waiter)
            return true
        }
        return done
    }

    mutating func beginWork() {
        work += 1
    }

    /// Ends a drain or exclusive work; returns the closing work to run now, if the log is closed and idle.
    mutating func endWork() -> (@Sendable () -> Void)? {
        work -= 1
        return takeClosingWork()
    }

    /// Fails the log; returns the waiters to fail.
    mutating func fail(_ failure: RelayError) -> [Waiter] {
        self.failure = self.failure ?? failure
        defer { waiters = [] }
        return waiters.map(\.waiter)
    }

    /// Closes the log; returns the waiters to fail, and the closing work to run now if no work is queued or running.
    mutating func close(
        failure: RelayError, whenIdle: @escaping @Sendable () -> Void
    ) -> (waiters: [Waiter], closing: (@Sendable () -> Void)?) {
        isOpen = false
        batch = empty
        self.whenIdle = whenIdle
        let waiters = fail(failure)
        return (waiters, takeClosingWork())
    }

    private mutating func takeClosingWork() -> (@Sendable () -> Void)? {
        guard !isOpen, work == 0 else { return nil }
        defer { whenIdle = nil }
        return whenIdle
    }
}
