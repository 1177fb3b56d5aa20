import Foundation

/// Folds recorded transitions, oldest first, into the state a DataPoint reopens from.
///
/// Replaying the same records always yields the same state, and a terminal state is applied once: a second
/// `finished` record for an operation is counted in ``duplicateTerminals`` and ignored.
struct StoredStateBuilder {
    private var lastSnapshot: UInt64
    private var suspensionCount: Int
    private var sequences: [StoredSequence]
    private var sequenceIndex: [CallSequence.Name: Int] = [:]
    private var operations: [StoredOperation]
    private var operationIndex: [UUID: Int] = [:]
    private var indexed = false
    private(set) var duplicateTerminals = 0
    /// Operations whose last recorded attempt started and never ended.
    private var running: Set<UUID> = []
    /// The latest date any record carries: the store's own notion of now, independent of the wall clock.
    private(set) var latestDate: Date?

    init(_ state: StoredState = .empty) {
        lastSnapshot = state.lastSnapshot
        suspensionCount = state.suspensionCount
        sequences = state.sequences
        operations = state.operations
        for (index, sequence) in sequences.enumerated() { sequenceIndex[sequence.name] = index }
    }

    /// Indexes the snapshot's operations on the first record that needs it, so that reopening a store with an empty
    /// journal never builds the index.
    private mutating func indexOperations() {
        guard !indexed else { return }
        indexed = true
        operationIndex.reserveCapacity(operations.count)
        for (index, entry) in operations.enumerated() { operationIndex[entry.operation.id] = index }
    }

    /// Operations that were running when the records end.
    var interruptedCount: Int { running.count }

    mutating func apply(_ record: StorageRecord) {
        if let date = record.date { latestDate = max(latestDate ?? date, date) }
        indexOperations()
        switch record {
        case .commit(let snapshot, let committed, let date):
            lastSnapshot = max(lastSnapshot, snapshot)
            for operation in committed where operationIndex[operation.id] == nil {
                operationIndex[operation.id] = operations.count
                operations.append(StoredOperation(operation: operation, snapshot: snapshot, enqueuedAt: date))
            }
        case .started(let id, let attempt, let date):
            running.insert(id)
            update(id) { entry in
                entry.attempts = max(entry.attempts, attempt)
                entry.firstStartedAt = entry.firstStartedAt ?? date
                entry.retryAt = nil
            }
        case .retryScheduled(let id, let attempt, let date):
            running.remove(id)
            update(id) { entry in
                entry.attempts = max(entry.attempts, attempt)
                entry.retryAt = date
            }
        case .interrupted(let id, _):
            running.remove(id)
            update(id) { $0.retryAt = nil }
        case .attemptReturned(let id, let attempts):
            running.remove(id)
            update(id) { $0.attempts = attempts }
        case .finished(let id, let result, let date):
            running.remove(id)
            var duplicate = false
            update(id) { entry in
                guard entry.result == nil else {
                    duplicate = true
                    return
                }
                entry.result = result
                entry.finishedAt = date
                entry.retryAt = nil
                entry.holds = [:]
            }
            if duplicate { duplicateTerminals += 1 }
        case .held(let id, let until, let context):
            update(id) { $0.holds[context] = until }
        case .sequenceConfigured(let name, let bunchSize, let algorithm):
            updateSequence(name) { sequence in
                sequence.bunchSize = bunchSize
                sequence.algorithm = algorithm
            }
        case .suspensionChanged(let name, let count):
            guard let name else {
                suspensionCount = count
                return
            }
            updateSequence(name) { $0.suspensionCount = count }
        }
    }

    /// The folded state; finished operations that finished before `cutoff` are forgotten.
    ///
    /// Consuming, so that a million operations move into the state instead of being copied.
    consuming func build(forgettingFinishedBefore cutoff: Date? = nil) -> StoredState {
        if let cutoff {
            operations.removeAll { entry in entry.finishedAt.map { $0 < cutoff } ?? false }
        }
        return StoredState(
            lastSnapshot: lastSnapshot,
            operations: operations,
            sequences: sequences,
            suspensionCount: suspensionCount
        )
    }

    private mutating func update(_ id: UUID, _ change: (inout StoredOperation) -> Void) {
        guard let index = operationIndex[id] else { return }
        change(&operations[index])
    }

    private mutating func updateSequence(_ name: CallSequence.Name, _ change: (inout StoredSequence) -> Void) {
        if let index = sequenceIndex[name] { return change(&sequences[index]) }
        var sequence = StoredSequence(name: name, bunchSize: 1, algorithm: .flat, suspensionCount: 0)
        change(&sequence)
        sequenceIndex[name] = sequences.count
        sequences.append(sequence)
    }
}

extension StorageRecord {
    /// When the transition happened, for records that say.
    var date: Date? {
        switch self {
        case .commit(_, _, let date), .started(_, _, let date), .interrupted(_, let date), .finished(_, _, let date):
            date
        case .retryScheduled, .attemptReturned, .held, .sequenceConfigured, .suspensionChanged:
            nil
        }
    }
}
