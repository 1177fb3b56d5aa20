import Synchronization

/// The log a ``GroupCommit`` writes to: a store's journal, a table, a remote log.
public protocol GroupCommitWriter<Batch>: Sendable {
    /// What transitions are gathered into between two writes, such as encoded bytes.
    associatedtype Batch: Sendable

    /// Writes a batch after every earlier one and makes it durable under the store's policy.
    ///
    /// ``GroupCommit`` calls it from one task at a time, outside any lock, so it may suspend, and may do other work
    /// that needs the log to itself, such as compaction, before it returns.
    ///
    /// - Parameter batch: Every transition appended since the last write, oldest first.
    /// - Throws: Any error, when the batch could not be made durable; every wait fails with it from then on.
    func write(_ batch: Batch) async throws
}

/// Group commit for a store that appends transitions to a log: whoever waits first, while no write is in flight,
/// writes everything appended so far in one write, and those who arrive meanwhile wait and share the next one.
///
/// A store calls ``append(transitions:_:)`` from ``Storage/append(_:)`` and ``waitUntilDurable(_:)`` from
/// ``Storage/waitUntilDurable(_:)``; the writer does the I/O. Under load, one write and one sync cover many
/// transitions, so a store's throughput is bound by its writes per second, not its transitions per second.
///
/// ```swift
/// let commits = GroupCommit(writer: myJournal, empty: Data())
/// func append(_ records: [StorageRecord]) -> StorageTicket {
///     commits.append(transitions: records.count) { batch in
///         for record in records { batch.append(record.encoded()) }
///     }
/// }
/// ```
public final class GroupCommit<Writer: GroupCommitWriter>: Sendable {
    private struct Waiter: Sendable {
        /// The position the waiter needs durable; `nil` when it waits only for the lead.
        let position: UInt64?
        let continuation: CheckedContinuation<Bool, any Error>
    }

    private enum Role {
        case done, lead, follow
    }

    private struct State: Sendable {
        var batch: Writer.Batch
        var isOpen = true
        var appended: UInt64 = 0
        var durable: UInt64 = 0
        var writing = false
        var waiters: [Waiter] = []
        var failure: RelayError?
        /// What to run once no write is in flight, after ``close(failure:whenIdle:)``.
        var whenIdle: (@Sendable () -> Void)?

        /// The closing work to run now that no write is in flight, if the log is closed.
        mutating func takeClosingWork() -> (@Sendable () -> Void)? {
            guard !isOpen, !writing else { return nil }
            defer { whenIdle = nil }
            return whenIdle
        }
    }

    private let writer: Writer
    private let empty: Writer.Batch
    private let state: Mutex<State>

    /// Creates a group commit that writes with `writer`.
    ///
    /// - Parameters:
    ///   - writer: The log.
    ///   - empty: An empty batch, which each write starts the next one from.
    public init(writer: Writer, empty: Writer.Batch) {
        self.writer = writer
        self.empty = empty
        state = Mutex(State(batch: empty))
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
        state.withLock { state in
            guard state.isOpen else { return StorageTicket(position: state.appended) }
            add(&state.batch)
            state.appended += UInt64(transitions)
            return StorageTicket(position: state.appended)
        }
    }

    /// Returns once every transition up to `ticket` is durable, writing them itself if no write is in flight.
    ///
    /// - Parameter ticket: A ticket from ``append(transitions:_:)``.
    /// - Throws: What the writer threw, for this wait and every later one; or the failure the log was closed with.
    public func waitUntilDurable(_ ticket: StorageTicket) async throws {
        while true {
            let role = try state.withLock { (state) throws(RelayError) -> Role in
                if state.durable >= ticket.position { return .done }
                if let failure = state.failure { throw failure }
                if state.writing { return .follow }
                state.writing = true
                return .lead
            }
            switch role {
            case .done: return
            case .lead: try await writeRound()
            case .follow: if try await follow(until: ticket.position) { try await writeRound() }
            }
        }
    }

    /// Runs `body` as the only writer, once the write in flight, if any, has ended; for work that needs the log to
    /// itself, such as compaction.
    ///
    /// - Parameter body: The work.
    /// - Throws: What `body` threw, which fails the log as a failed write does; or the log's failure, without running
    ///   `body`, once it has failed or closed.
    public func exclusively(_ body: () async throws -> Void) async throws {
        let leading = try state.withLock { (state) throws(RelayError) in
            if let failure = state.failure { throw failure }
            guard !state.writing else { return false }
            state.writing = true
            return true
        }
        if !leading, !(try await follow(until: nil)) { return }
        if let failure = state.withLock({ $0.failure }) {
            handOff()
            throw failure
        }
        do {
            try await body()
        } catch {
            fail(error)
            throw error
        }
        handOff()
    }

    /// Closes the log: nothing more is appended or written, waiters fail with `failure`, and `whenIdle` runs once no
    /// write is in flight, at once if none is.
    ///
    /// - Parameters:
    ///   - failure: The error that waits end with.
    ///   - whenIdle: Releases what the writer holds, such as open files.
    public func close(failure: RelayError, whenIdle: @escaping @Sendable () -> Void) {
        let (waiters, closing) = state.withLock { state in
            state.isOpen = false
            state.failure = state.failure ?? failure
            state.batch = empty
            state.whenIdle = whenIdle
            defer { state.waiters = [] }
            return (state.waiters, state.takeClosingWork())
        }
        closing?()
        for waiter in waiters { waiter.continuation.resume(throwing: failure) }
    }

    // MARK: - Rounds

    /// Waits as a follower; `true` when handed the lead.
    private func follow(until position: UInt64?) async throws -> Bool {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            let immediate = state.withLock { state -> Result<Bool, RelayError>? in
                if let position, state.durable >= position { return .success(false) }
                if let failure = state.failure { return .failure(failure) }
                if !state.writing {
                    state.writing = true
                    return .success(true)
                }
                state.waiters.append(Waiter(position: position, continuation: continuation))
                return nil
            }
            if let immediate { continuation.resume(with: immediate) }
        }
    }

    /// Writes everything appended so far in one write, as the lead.
    private func writeRound() async throws {
        let round = state.withLock { state -> (batch: Writer.Batch, target: UInt64)? in
            guard state.isOpen, state.appended > state.durable else { return nil }
            defer { state.batch = empty }
            return (state.batch, state.appended)
        }
        if let round {
            do {
                try await writer.write(round.batch)
            } catch {
                fail(error)
                throw error
            }
            state.withLock { $0.durable = max($0.durable, round.target) }
        } else if let failure = state.withLock({ $0.failure }) {
            fail(failure)
            throw failure
        }
        handOff()
    }

    /// Resumes the waiters that are durable now and hands the lead to the first one that is not.
    private func handOff() {
        let (done, next, closing) = state.withLock { state in
            var done: [Waiter] = []
            var remaining: [Waiter] = []
            for waiter in state.waiters {
                if let position = waiter.position, position <= state.durable {
                    done.append(waiter)
                } else {
                    remaining.append(waiter)
                }
            }
            let next = remaining.isEmpty ? nil : remaining.removeFirst()
            state.waiters = remaining
            if next == nil { state.writing = false }
            return (done, next, state.takeClosingWork())
        }
        closing?()
        for waiter in done { waiter.continuation.resume(returning: false) }
        next?.continuation.resume(returning: true)
    }

    /// Fails the log: this wait and every later one throw.
    private func fail(_ error: any Error) {
        let failure = error as? RelayError ?? RelayError(.storageFailure, "the store failed: \(error)")
        let (waiters, closing) = state.withLock { state in
            state.failure = state.failure ?? failure
            state.writing = false
            defer { state.waiters = [] }
            return (state.waiters, state.takeClosingWork())
        }
        closing?()
        for waiter in waiters { waiter.continuation.resume(throwing: failure) }
    }
}
