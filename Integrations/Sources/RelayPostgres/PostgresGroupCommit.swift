import Relay
import Synchronization

/// A store's group commits on PostgreSQL: what is appended gathers until a task waits for it, and that task writes
/// everything gathered so far, in one go, then hands what was gathered meanwhile to one task still waiting.
///
/// There is no writer task: the write runs in a task that waits, through the `write` it passes, so that a write in
/// flight ends even when the task that started it is cancelled, and a store that nobody waits on writes nothing. A
/// write that fails fails the store for good: every wait then throws it, and nothing more is gathered.
final class PostgresGroupCommit<Item: Sendable & Equatable>: Sendable {
    private typealias Waiter = CheckedContinuation<Turn, Never>

    /// What a task that waits does next.
    private enum Turn: Sendable {
        case durable
        case failed(RelayError)
        case write(PostgresBatch<Item>)
    }

    private let state = Mutex(PostgresCommitState<Waiter, Item>())

    /// The position of the last item appended.
    var appended: UInt64 { state.withLock { $0.appended } }

    /// Gathers items for the next write; returns the ticket of the last.
    func append(_ items: [Item]) -> StorageTicket {
        StorageTicket(
            position: state.withLock { state in
                var last = state.appended
                for item in items { last = state.append(item) }
                return last
            })
    }

    /// Returns once the items up to `ticket` are written, writing them with `write` if no write is in flight.
    ///
    /// - Throws: The ``RelayError`` of the write that failed the store, or ``RelayError/Code/storageFailure``.
    func waitUntilDurable(
        _ ticket: StorageTicket, write: (PostgresBatch<Item>) async throws -> Void
    ) async throws {
        let turn = await withCheckedContinuation { (waiter: Waiter) in
            switch state.withLock({ $0.wait(for: ticket.position, waiter) }) {
            case .durable: waiter.resume(returning: .durable)
            case .failed(let failure): waiter.resume(returning: .failed(failure))
            case .write(let batch): waiter.resume(returning: .write(batch))
            case .park: break
            }
        }
        switch turn {
        case .durable: return
        case .failed(let failure): throw failure
        case .write(let batch):
            do {
                try await write(batch)
            } catch {
                let failure =
                    error as? RelayError
                    ?? RelayError(.storageFailure, "the Relay store could not be written: \(String(reflecting: error))")
                for waiter in state.withLock({ $0.fail(failure) }) { waiter.resume(returning: .failed(failure)) }
                throw failure
            }
            let (done, next) = state.withLock { $0.wrote(through: batch.through) }
            for waiter in done { waiter.resume(returning: .durable) }
            if let (waiter, batch) = next { waiter.resume(returning: .write(batch)) }
        }
    }

    /// Nothing more is gathered; the store is closing.
    func close() {
        state.withLock { $0.close() }
    }
}
