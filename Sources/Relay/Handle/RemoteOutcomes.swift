import Foundation
import Synchronization

/// The handles of operations this process enqueued on a shared store, until the store reports their outcomes.
///
/// An outcome may arrive before the commit that enqueued the operation has returned (another process ran it at once):
/// the ids are expected before the commit, and an outcome that arrives for an expected id waits for its records.
/// Once the DataPoint has shut down, every handle still waiting ends with ``RelayError/Code/shutdown``, as the handle
/// of an operation run here does.
final class RemoteOutcomes: Sendable {
    private enum Entry {
        case waiting([OperationRecord])
        case arrived(CallResult)
    }

    /// The entries, or `nil` once the DataPoint has shut down.
    private let entries = Mutex<[UUID: Entry]?>([:])

    private static let shutdown = RelayError(
        .shutdown, "the DataPoint shut down before the operation finished; it stays stored, and the fleet runs it")

    /// Ends the wait of every handle still waiting, and of those attached later, with a shutdown error.
    func close() {
        let waiting = entries.withLock { entries -> [OperationRecord] in
            defer { entries = nil }
            return (entries ?? [:]).values.flatMap { entry -> [OperationRecord] in
                guard case .waiting(let records) = entry else { return [] }
                return records
            }
        }
        for record in waiting { record.settle(.failure(Self.shutdown)) }
    }

    /// Expects outcomes for `ids`, before their commit.
    func expect(_ ids: [UUID]) {
        entries.withLock { entries in
            for id in ids where entries?[id] == nil { entries?[id] = .waiting([]) }
        }
    }

    /// Stops expecting outcomes for `ids`, whose commit failed and whose handles nobody holds.
    func forget(_ ids: [UUID]) {
        entries.withLock { entries in
            for id in ids {
                if case .waiting(let records) = entries?[id], records.isEmpty { entries?[id] = nil }
            }
        }
    }

    /// Attaches the handles' records of a commit that returned, settling those whose outcomes arrived meanwhile.
    func attach(_ records: [OperationRecord]) {
        let ready = entries.withLock { entries -> [(OperationRecord, Result<CallResult, RelayError>)] in
            guard entries != nil else { return records.map { ($0, .failure(Self.shutdown)) } }
            var ready: [(OperationRecord, Result<CallResult, RelayError>)] = []
            for record in records {
                switch entries?[record.id] {
                case .arrived(let result):
                    ready.append((record, .success(result)))
                    entries?[record.id] = nil
                case .waiting(let others):
                    entries?[record.id] = .waiting(others + [record])
                case nil:
                    entries?[record.id] = .waiting([record])
                }
            }
            return ready
        }
        for (record, outcome) in ready { record.settle(outcome) }
    }

    /// Settles the handles awaiting `outcomes`, or keeps an outcome for an expected id whose records are not attached
    /// yet; an outcome nobody awaits is dropped.
    func settle(_ outcomes: [UUID: CallResult]) {
        guard !outcomes.isEmpty else { return }
        let ready = entries.withLock { entries -> [(OperationRecord, CallResult)] in
            var ready: [(OperationRecord, CallResult)] = []
            for (id, result) in outcomes {
                guard case .waiting(let records) = entries?[id] else { continue }
                if records.isEmpty {
                    entries?[id] = .arrived(result)
                } else {
                    ready += records.map { ($0, result) }
                    entries?[id] = nil
                }
            }
            return ready
        }
        for (record, result) in ready { record.settle(.success(result)) }
    }

    /// Ends the wait of the handles attached for `ids` with `error`; an id whose commit has not returned is left as
    /// it is.
    func fail(_ ids: [UUID], with error: RelayError) {
        let failed = entries.withLock { entries -> [OperationRecord] in
            var failed: [OperationRecord] = []
            for id in ids {
                guard case .waiting(let records) = entries?[id], !records.isEmpty else { continue }
                failed += records
                entries?[id] = nil
            }
            return failed
        }
        for record in failed { record.settle(.failure(error)) }
    }

    /// Those of `ids` whose outcomes are awaited, in their order; with `committedOnly`, only those whose commits
    /// returned, which have handles attached.
    func awaited(among ids: [UUID], committedOnly: Bool = false) -> [UUID] {
        entries.withLock { entries in
            ids.filter { id in
                guard case .waiting(let records) = entries?[id] else { return false }
                return !committedOnly || !records.isEmpty
            }
        }
    }

    /// Where an operation stands for the handles here.
    enum Standing: Sendable {
        /// No handle here awaits it.
        case unknown
        /// A handle here awaits its outcome.
        case awaited
        /// It ended, as a handle of it here knows.
        case ended
    }

    /// Where operation `id` stands for the handles here; `ended` when the caller's handle has its outcome.
    func standing(of id: UUID, ended: Bool = false) -> Standing {
        if ended { return .ended }
        return entries.withLock { entries in
            guard case .waiting = entries?[id] else { return .unknown }
            return .awaited
        }
    }

    /// The operations whose outcomes are awaited.
    var awaited: [UUID] {
        entries.withLock { entries in
            (entries ?? [:]).compactMap { id, entry in
                guard case .waiting = entry else { return nil }
                return id
            }
        }
    }
}
