import Foundation
import Relay

/// What was gathered for one write, oldest first, and the position the write makes durable.
struct PostgresBatch<Item: Sendable & Equatable>: Sendable, Equatable {
    var items: [Item] = []
    var through: UInt64 = 0
}

/// One record of a ``PostgresStorage``, as its log keeps it.
struct PostgresLogEntry: Sendable, Equatable {
    let kind: String
    let body: Data
}

/// The state of a store's group commits: what was gathered since the last write, how far they are durable,
/// who waits, and which waiting task writes next.
///
/// There is no writer task: the first task that waits for records not yet written writes them, with everything
/// gathered so far, in one database transaction, and hands the next batch to one task still waiting, so that records
/// appended while a write is in flight share the next one. Each event returns what its caller must do once the lock
/// is let go.
struct PostgresCommitState<Waiter: Sendable, Item: Sendable & Equatable>: Sendable {
    typealias Batch = PostgresBatch<Item>

    /// What a task that waits must do.
    enum WaitAction: Sendable, Equatable {
        /// The records are durable: return.
        case durable
        /// The store has failed: throw.
        case failed(RelayError)
        /// Write this batch, then report it with ``wrote(through:)``.
        case write(Batch)
        /// Park: a write in flight, or the next, covers the records.
        case park
    }

    private var pending = Batch()
    private(set) var appended: UInt64 = 0
    private(set) var durable: UInt64 = 0
    /// Whether a task is writing, or has been handed the next batch.
    private var writing = false
    private var waiters: [(position: UInt64, waiter: Waiter)] = []
    private(set) var failure: RelayError?
    private var isOpen = true

    /// Gathers one item for the next write; returns its position.
    mutating func append(_ item: Item) -> UInt64 {
        guard isOpen, failure == nil else { return appended }
        appended += 1
        pending.items.append(item)
        pending.through = appended
        return appended
    }

    /// A task waits until `position` is durable.
    mutating func wait(for position: UInt64, _ waiter: Waiter) -> WaitAction {
        if durable >= position { return .durable }
        if let failure { return .failed(failure) }
        guard writing else {
            writing = true
            return .write(takeBatch())
        }
        waiters.append((position, waiter))
        return .park
    }

    /// A write made the records through `target` durable: the waiters it satisfied, and the one that writes next,
    /// with its batch, when records still wait.
    mutating func wrote(through target: UInt64) -> (done: [Waiter], next: (Waiter, Batch)?) {
        durable = max(durable, target)
        writing = false
        var done: [Waiter] = []
        waiters.removeAll { entry in
            guard entry.position <= durable else { return false }
            done.append(entry.waiter)
            return true
        }
        guard !waiters.isEmpty else { return (done, nil) }
        writing = true
        let next = waiters.removeFirst().waiter
        return (done, (next, takeBatch()))
    }

    /// A write failed: the store fails for good; returns every waiter, to fail with `failure`.
    mutating func fail(_ failure: RelayError) -> [Waiter] {
        self.failure = self.failure ?? failure
        writing = false
        pending = Batch()
        defer { waiters = [] }
        return waiters.map(\.waiter)
    }

    /// Nothing more is gathered; the store is closing.
    mutating func close() {
        isOpen = false
    }

    private mutating func takeBatch() -> Batch {
        defer { pending = Batch() }
        return pending
    }
}
