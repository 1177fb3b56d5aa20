import Dispatch
import Synchronization

/// The log a ``GroupCommit`` writes to: a store's journal, a table, a remote log.
///
/// A write may leave its batch to be made durable by a sync, which then runs beside the next batch's write; a
/// writer whose writes are durable when they return needs neither ``sync()`` nor ``performMaintenance()``.
public protocol GroupCommitWriter<Batch>: Sendable {
    /// What transitions are gathered into between two writes, such as encoded bytes.
    associatedtype Batch: Sendable

    /// Writes a batch after every earlier one.
    ///
    /// ``GroupCommit`` calls it on a serial dispatch queue of its own, one batch at a time and outside any lock, never
    /// on the tasks that wait; it may block on I/O.
    ///
    /// - Parameter batch: Every transition appended since the last write, oldest first.
    /// - Returns: What the batch still needs: a sync to be durable, maintenance once it is.
    /// - Throws: Any error, when the batch could not be written; every wait fails with it from then on.
    func write(_ batch: Batch) throws -> GroupCommitWrite

    /// Makes every batch written before the call durable.
    ///
    /// It runs on a second queue while the next batch is written, and at most one runs at a time.
    ///
    /// - Throws: Any error, when the log could not be made durable; every wait fails with it from then on.
    func sync() throws

    /// Work that needs the log to itself, such as compaction; it runs after the batch that asked for it is durable,
    /// with no sync or write in flight.
    ///
    /// - Throws: Any error, which fails every wait from then on.
    func performMaintenance() throws
}

extension GroupCommitWriter {
    /// Nothing to sync: each write is durable when it returns.
    public func sync() throws {}

    /// No maintenance.
    public func performMaintenance() throws {}
}

/// What a written batch still needs before ``GroupCommit`` acknowledges it.
public struct GroupCommitWrite: Sendable, Hashable {
    /// Whether it is durable only once ``GroupCommitWriter/sync()`` has run.
    public var needsSync: Bool
    /// Whether ``GroupCommitWriter/performMaintenance()`` should run once it is durable.
    public var needsMaintenance: Bool

    /// Creates a description of a write.
    ///
    /// - Parameters:
    ///   - needsSync: Whether it is durable only once synced.
    ///   - needsMaintenance: Whether maintenance should follow it.
    public init(needsSync: Bool = false, needsMaintenance: Bool = false) {
        self.needsSync = needsSync
        self.needsMaintenance = needsMaintenance
    }

    /// A batch that is durable as written.
    public static let durable = GroupCommitWrite()
}

/// Group commit for a store that appends transitions to a log: one write at a time, each taking everything appended
/// so far, so transitions that arrive while a write is in flight share the next one.
///
/// A store calls ``append(transitions:_:)`` from ``Storage/append(_:)`` and ``waitUntilDurable(_:)`` from
/// ``Storage/waitUntilDurable(_:)``; the writer does the I/O. The first wait starts a drain on the group commit's
/// queue, which writes batch after batch while transitions wait, and resumes each waiter as soon as its transitions
/// are durable. The next write starts as the previous one ends, on the same thread, so the tasks resumed by one write
/// fill the next while it is in flight; and a batch that needs a sync is synced on a second queue while the next batch
/// is written, so a write and a sync overlap. Under load, one write and one sync cover many transitions, so a store's
/// throughput is bound by its syncs per second, not its transitions per second.
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
    // Syncs run here, beside the next write.
    private let syncQueue = DispatchQueue(label: "Relay.GroupCommit.sync")

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

    /// Writes batch after batch on the queue while transitions wait, resuming waiters once their batch is durable.
    ///
    /// A batch that needs a sync is synced on the second queue while the next batch is written; the drain waits for
    /// that sync before it acknowledges anything later, so acknowledgements stay in order.
    private func drain() {
        var syncing: SyncInFlight?
        while let round = state.withLock({ $0.nextRound() }) {
            let written: GroupCommitWrite
            do {
                written = try writer.write(round.batch)
            } catch {
                settle(syncing)
                syncing = nil
                // The next round sees the failure and ends the drain.
                fail(error)
                continue
            }
            let previous = syncing
            syncing = nil
            guard finish(previous) else { continue }
            // The next sync starts before the previous one's waiters are resumed, so the disk waits for no one; a batch
            // that asks for maintenance is synced here instead, since maintenance needs no sync in flight.
            if written.needsSync && !written.needsMaintenance { syncing = startSync(through: round.target) }
            previous.map { acknowledge(through: $0.target) }
            if written.needsMaintenance {
                do {
                    if written.needsSync { try writer.sync() }
                    acknowledge(through: round.target)
                    try writer.performMaintenance()
                } catch {
                    fail(error)
                }
            } else if !written.needsSync {
                acknowledge(through: round.target)
            }
        }
        settle(syncing)
        endWork()
    }

    /// A sync running on the second queue, and how it ended once it has.
    private final class SyncInFlight: Sendable {
        let target: UInt64
        let done = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)

        init(target: UInt64) {
            self.target = target
        }
    }

    private func startSync(through target: UInt64) -> SyncInFlight {
        let sync = SyncInFlight(target: target)
        syncQueue.async { [writer] in
            do {
                try writer.sync()
            } catch {
                sync.failure.withLock { $0 = error }
            }
            sync.done.signal()
        }
        return sync
    }

    /// Waits for the sync in flight, if any, and acknowledges what it made durable; `false` when it failed.
    @discardableResult
    private func settle(_ sync: SyncInFlight?) -> Bool {
        guard finish(sync) else { return false }
        sync.map { acknowledge(through: $0.target) }
        return true
    }

    /// Waits for the sync in flight, if any; `false`, with the log failed, when it failed.
    private func finish(_ sync: SyncInFlight?) -> Bool {
        guard let sync else { return true }
        sync.done.wait()
        if let error = sync.failure.withLock({ $0 }) {
            fail(error)
            return false
        }
        return true
    }

    private func acknowledge(through target: UInt64) {
        let done = state.withLock { $0.wrote(through: target) }
        for waiter in done { waiter.resume() }
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
