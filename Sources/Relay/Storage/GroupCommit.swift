import Dispatch
import Synchronization

/// The log a ``GroupCommit`` writes to: a store's journal, a table, a remote log.
public protocol GroupCommitWriter<Batch>: Sendable {
    /// What transitions are gathered into between two writes, such as encoded bytes.
    associatedtype Batch: Sendable

    /// Writes a batch after every earlier one and makes it durable under the store's policy.
    ///
    /// ``GroupCommit`` calls it on a serial dispatch queue of its own, one batch at a time and outside any lock, never
    /// on the tasks that wait; it may block on I/O, and may do other work that needs the log to itself, such as
    /// compaction, before it returns.
    ///
    /// - Parameter batch: Every transition appended since the last write, oldest first.
    /// - Throws: Any error, when the batch could not be made durable; every wait fails with it from then on.
    func write(_ batch: Batch) throws
}

/// Group commit for a store that appends transitions to a log: one write at a time, each taking everything appended
/// so far, so transitions that arrive while a write is in flight share the next one.
///
/// A store calls ``append(transitions:_:)`` from ``Storage/append(_:)`` and ``waitUntilDurable(_:)`` from
/// ``Storage/waitUntilDurable(_:)``; the writer does the I/O. The first wait starts a drain on the group commit's
/// queue, which writes batch after batch while transitions wait, and resumes each waiter as soon as its transitions
/// are durable. The next write starts as the previous one ends, on the same thread, so the tasks resumed by one write
/// fill the next while it is in flight. Under load, one write and one sync cover many transitions, so a store's
/// throughput is bound by its writes per second, not its transitions per second.
///
/// A store whose writer's batch is a list of frames, each the encoded records of one call to ``Storage/append(_:)``,
/// holds a `GroupCommit` as `commits`, and its two writing calls are:
///
/// ```swift
/// func append(_ records: [StorageRecord]) -> StorageTicket {
///     commits.append(transitions: 1) { $0.append(records.map { $0.encoded() }) }
/// }
///
/// func waitUntilDurable(_ ticket: StorageTicket) async throws {
///     try await commits.waitUntilDurable(ticket)
/// }
/// ```
public final class GroupCommit<Writer: GroupCommitWriter>: Sendable {
    private let writer: Writer
    private typealias Waiter = CheckedContinuation<Void, any Error>
    private let state: Mutex<GroupCommitState<Writer.Batch, Waiter>>
    // Writes and exclusive work run here, one at a time, off the cooperative thread pool.
    private let queue = DispatchQueue(label: "Relay.GroupCommit")

    /// Creates a group commit that writes with `writer`.
    ///
    /// - Parameters:
    ///   - writer: The log.
    ///   - empty: An empty batch, which each write starts the next one from.
    public init(writer: Writer, empty: Writer.Batch) {
        self.writer = writer
        state = Mutex(GroupCommitState(empty: empty))
    }

    /// The ticket of the last transition appended.
    public var lastTicket: StorageTicket {
        StorageTicket(position: state.withLock { $0.appended })
    }

    /// Adds transitions to the next write; quick and never suspends, so a store can call it under the pipeline's
    /// lock.
    ///
    /// After ``close(failure:whenIdle:)`` nothing is added.
    ///
    /// - Parameters:
    ///   - transitions: How many transitions `add` adds; each advances the ticket by one.
    ///   - add: Adds them to the batch.
    /// - Returns: The ticket of the last one.
    public func append(transitions: Int, _ add: (inout Writer.Batch) -> Void) -> StorageTicket {
        StorageTicket(position: state.withLock { $0.append(transitions: transitions, add) })
    }

    /// Returns once every transition up to `ticket` is durable, starting a drain if none is running.
    ///
    /// - Parameter ticket: A ticket from ``append(transitions:_:)``.
    /// - Throws: What the writer threw, for this wait and every later one; or the failure the log was closed with.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {
        if let settled = state.withLock({ $0.settled(ticket.position) }) { return try settled.get() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            switch state.withLock({ $0.wait(for: ticket.position, continuation) }) {
            case .resume(.success): continuation.resume()
            case .resume(.failure(let failure)): continuation.resume(throwing: failure)
            case .startDrain: queue.async { self.drain() }
            case .none: break
            }
        }
    }

    /// Runs `body` as the only writer, after the writes in flight or queued before it; for work that needs the log
    /// to itself, such as compaction.
    ///
    /// - Parameter body: The work; it runs on the group commit's queue and may block.
    /// - Throws: What `body` threw, which fails the log as a failed write does; or the log's failure, without running
    ///   `body`, once it has failed or closed.
    public func exclusively(_ body: @escaping @Sendable () throws -> Void) async throws {
        state.withLock { $0.beginWork() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                let result: Result<Void, any Error>
                if let failure = self.state.withLock({ $0.failure }) {
                    result = .failure(failure)
                } else {
                    do {
                        try body()
                        result = .success(())
                    } catch {
                        self.fail(error)
                        result = .failure(error)
                    }
                }
                self.endWork()
                continuation.resume(with: result)
            }
        }
    }

    /// Closes the log: nothing more is appended or written, waiters fail with `failure`, and `whenIdle` runs once no
    /// write is in flight, at once if none is.
    ///
    /// - Parameters:
    ///   - failure: The error that waits end with.
    ///   - whenIdle: Releases what the writer holds, such as open files.
    public func close(failure: RelayError, whenIdle: @escaping @Sendable () -> Void) {
        let (waiters, closing) = state.withLock { $0.close(failure: failure, whenIdle: whenIdle) }
        closing?()
        for waiter in waiters { waiter.resume(throwing: failure) }
    }

    // MARK: - The drain

    /// Writes batch after batch on the queue while transitions wait, resuming waiters after each write.
    private func drain() {
        while let round = state.withLock({ $0.nextRound() }) {
            do {
                try writer.write(round.batch)
            } catch {
                // The next round sees the failure and ends the drain.
                fail(error)
                continue
            }
            let done = state.withLock { $0.wrote(through: round.target) }
            for waiter in done { waiter.resume() }
        }
        endWork()
    }

    private func endWork() {
        state.withLock { $0.endWork() }?()
    }

    /// Fails the log: every wait, now and later, throws.
    private func fail(_ error: any Error) {
        let failure = error as? RelayError ?? RelayError(.storageFailure, "the store failed: \(error)")
        let waiters = state.withLock { $0.fail(failure) }
        for waiter in waiters { waiter.resume(throwing: failure) }
    }
}

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
    mutating func nextRound() -> (batch: Batch, target: UInt64)? {
        guard isOpen, failure == nil, appended > durable else {
            draining = false
            return nil
        }
        defer { batch = empty }
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
