import Foundation

extension StoredState {
    /// Folds recorded transitions, oldest first, into the state a DataPoint reopens from.
    ///
    /// A store that keeps records replays them with this when it opens, starting from its last snapshot, if any; the
    /// file store does. Replaying the same records always yields the same state, and a terminal state is applied once: a
    /// second `finished` record for an operation is counted in ``duplicateTerminals`` and ignored.
    ///
    /// ```swift
    /// var replay = StoredState.Replay(from: snapshot)
    /// for record in journal { replay.apply(record) }
    /// return replay.state(retention: .seconds(3600))
    /// ```
    public struct Replay: Sendable {
        private var lastSnapshot: UInt64
        private var suspensionCount: Int
        private var sequences: [StoredSequence]
        private var sequenceIndex: [CallSequence.Name: Int] = [:]
        private var operations: [StoredOperation]
        private var operationIndex: [UUID: Int] = [:]
        private var indexed = false
        /// How many `finished` records repeated a terminal state already applied; zero in a sound store.
        public private(set) var duplicateTerminals = 0
        /// Operations whose last recorded attempt started and never ended.
        private var running: Set<UUID> = []
        /// The latest date any record carries: the store's own notion of now, independent of the wall clock.
        public private(set) var latestDate: Date?

        /// Starts from a snapshot of the state.
        ///
        /// - Parameter state: The state the records follow; ``StoredState/empty`` when they are all there is.
        public init(from state: StoredState = .empty) {
            lastSnapshot = state.lastSnapshot
            suspensionCount = state.suspensionCount
            sequences = state.sequences
            operations = state.operations
            for (index, sequence) in sequences.enumerated() { sequenceIndex[sequence.name] = index }
            // A snapshot keeps no date of its own: the latest its operations carry stands for it.
            for entry in operations {
                let latest = max(
                    entry.enqueuedAt, entry.firstStartedAt ?? .distantPast, entry.finishedAt ?? .distantPast)
                latestDate = max(latestDate ?? latest, latest)
            }
        }

        /// Indexes the snapshot's operations on the first record that needs it, so that reopening a store with an empty
        /// journal never builds the index.
        private mutating func indexOperations() {
            guard !indexed else { return }
            indexed = true
            operationIndex.reserveCapacity(operations.count)
            for (index, entry) in operations.enumerated() { operationIndex[entry.operation.id] = index }
        }

        /// How many operations were running when the records end: the DataPoint runs them again, their attempt counted.
        public var interruptedCount: Int { running.count }

        /// Applies the next record.
        ///
        /// - Parameter record: A record later than every one applied so far.
        public mutating func apply(_ record: StorageRecord) {
            if let date = record.date { latestDate = max(latestDate ?? date, date) }
            indexOperations()
            switch record.change {
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

        /// The folded state; operations that finished `retention` or more before the latest record are forgotten, so
        /// that a retention of zero keeps none.
        ///
        /// Consuming, so that a million operations move into the state instead of being copied.
        ///
        /// - Parameter retention: How long finished operations are kept, as the DataPoint's configuration says; `nil`
        ///   keeps them all.
        /// - Returns: The state to reopen from.
        public consuming func state(retention: Duration? = nil) -> StoredState {
            let cutoff = retention.flatMap { retention in
                latestDate.map { $0.addingTimeInterval(-retention.relaySeconds) }
            }
            if let cutoff {
                operations.removeAll { entry in entry.finishedAt.map { $0 <= cutoff } ?? false }
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
}
