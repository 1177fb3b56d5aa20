import Foundation

extension StoredState {
    /// Folds recorded transitions, oldest first, into the state a DataPoint reopens from.
    ///
    /// A store that keeps records replays them with this when it opens, starting from its last snapshot, if any; the
    /// file store does. Replaying the same records always yields the same state, and a terminal state is applied once:
    /// a second `finished` record for an operation is counted in ``duplicateTerminals`` and ignored.
    ///
    /// Given the DataPoint's ``RetentionPolicy``, it forgets finished operations as soon as the policy lets them go, so
    /// that folding a long journal holds about what the DataPoint holds, not every operation the journal names.
    ///
    /// A store that keeps each record as ``StorageRecord/encoded()`` wrote it, in `journal`, opens with:
    ///
    /// ```swift
    /// var replay = StoredState.Replay(retention: retention)
    /// for encoded in journal { replay.apply(try StorageRecord(encoded: encoded)) }
    /// return replay.state()
    /// ```
    public struct Replay: Sendable {
        private var lastSnapshot: UInt64
        private var suspensionCount: Int
        private var sequences: [StoredSequence]
        private var sequenceIndex: [CallSequence.Name: Int] = [:]
        private var models: [String: [String: Data]]
        /// Operations in commit order; `nil` where one was forgotten, until the array is compacted.
        private var operations: [StoredOperation?]
        private var forgottenCount = 0
        private var operationIndex: [UUID: Int] = [:]
        private var indexed = false
        private let retention: RetentionPolicy?
        /// Completed and skipped operations kept, in the order they finished, with what each counts for.
        private var finished: RetainedQueue<UUID, Date>
        /// Failed and cancelled operations kept, in the order they ended, with what each counts for.
        private var deadLetters: RetainedQueue<UUID, Date>
        /// How many `finished` records repeated a terminal state already applied; zero in a sound store.
        public private(set) var duplicateTerminals = 0
        /// Operations whose last recorded attempt started and never ended.
        private var running: Set<UUID> = []
        /// The latest date any record carries: the store's own notion of now, independent of the wall clock.
        public private(set) var latestDate: Date?

        /// Starts from a snapshot of the state.
        ///
        /// - Parameters:
        ///   - state: The state the records follow; ``StoredState/empty`` when they are all there is.
        ///   - retention: What the DataPoint keeps of finished operations; `nil` keeps them all.
        public init(from state: StoredState = .empty, retention: RetentionPolicy? = nil) {
            lastSnapshot = state.lastSnapshot
            suspensionCount = state.suspensionCount
            sequences = state.sequences
            operations = state.operations
            models = state.models
            self.retention = retention
            let policy = retention ?? .window(.seconds(Int64.max))
            finished = RetainedQueue(maximumCount: policy.maximumOperations, maximumBytes: policy.maximumBytes)
            deadLetters = RetainedQueue(
                maximumCount: policy.maximumDeadLetters, maximumBytes: policy.maximumDeadLetterBytes)
            for (index, sequence) in sequences.enumerated() { sequenceIndex[sequence.name] = index }
            // A snapshot keeps no date of its own: the latest its operations carry stands for it.
            for entry in state.operations {
                let latest = max(
                    entry.enqueuedAt, entry.firstStartedAt ?? .distantPast, entry.finishedAt ?? .distantPast)
                latestDate = max(latestDate ?? latest, latest)
            }
            guard retention != nil else { return }
            let finishedFirst = state.operations.filter { $0.finishedAt != nil }.sorted {
                $0.finishedAt! < $1.finishedAt!
            }
            for entry in finishedFirst {
                guard let finishedAt = entry.finishedAt, let result = entry.result else { continue }
                note(entry.operation.id, finishedAt: finishedAt, payload: entry.operation.payload.count, result: result)
            }
        }

        /// Indexes the snapshot's operations on the first record that needs it, so that reopening a store with an empty
        /// journal never builds the index.
        private mutating func indexOperations() {
            guard !indexed else { return }
            indexed = true
            operationIndex.reserveCapacity(operations.count)
            for (index, entry) in operations.enumerated() {
                if let entry { operationIndex[entry.operation.id] = index }
            }
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
            case .retryScheduled(let id, let attempt, let date, let failure):
                running.remove(id)
                update(id) { entry in
                    entry.attempts = max(entry.attempts, attempt)
                    entry.retryAt = date
                    if let failure { entry.lastFailure = failure }
                }
            case .interrupted(let id, _):
                running.remove(id)
                update(id) { $0.retryAt = nil }
            case .attemptReturned(let id, let attempts, let sent):
                running.remove(id)
                update(id) { entry in
                    entry.attempts = attempts
                    if sent { entry.unansweredSends += 1 }
                }
            case .finished(let id, let result, let date, let ran, let changes):
                running.remove(id)
                var duplicate = false
                update(id) { entry in
                    guard entry.result == nil else {
                        duplicate = true
                        return
                    }
                    entry.result = result
                    entry.finishedAt = date
                    entry.runTime = .nanoseconds(ran)
                    entry.retryAt = nil
                    entry.holds = [:]
                }
                if duplicate {
                    duplicateTerminals += 1
                    return
                }
                for change in changes { models[change.collection, default: [:]][change.id] = change.encoded }
                if retention != nil, let index = operationIndex[id], let entry = operations[index] {
                    note(id, finishedAt: date, payload: entry.operation.payload.count, result: result)
                    forgetBeyondPolicy()
                }
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
            case .models(let snapshot, let changes, _):
                lastSnapshot = max(lastSnapshot, snapshot)
                for change in changes { models[change.collection, default: [:]][change.id] = change.encoded }
            case .purged(let ids, _):
                let purged = Set(ids.filter { id in operationIndex[id].flatMap { operations[$0]?.result } != nil })
                finished.remove(purged)
                deadLetters.remove(purged)
                for id in purged { forget(id) }
                compactIfHalfForgotten()
            }
        }

        /// Notes a finished operation that the policy keeps for now.
        private mutating func note(_ id: UUID, finishedAt: Date, payload: Int, result: CallResult) {
            let bytes = RetentionPolicy.retainedSize(payload: payload, result: result)
            if RetentionPolicy.isDeadLetter(result) {
                deadLetters.append(id, finishedAt: finishedAt, bytes: bytes)
            } else {
                finished.append(id, finishedAt: finishedAt, bytes: bytes)
            }
        }

        /// Forgets the oldest finished operations of each class while the policy lets them go: beyond its bounds, or
        /// finished a window or more before the latest record, which only moves later.
        private mutating func forgetBeyondPolicy() {
            guard let retention else { return }
            let cutoff = latestDate.map { Self.cutoff($0, retention.window) } ?? .distantPast
            let deadLetterCutoff = latestDate.map { Self.cutoff($0, retention.deadLetterWindow) } ?? .distantPast
            while let id = finished.takeExcess() ?? finished.takeFinished(atOrBefore: cutoff) { forget(id) }
            while let id = deadLetters.takeExcess() ?? deadLetters.takeFinished(atOrBefore: deadLetterCutoff) {
                forget(id)
            }
            compactIfHalfForgotten()
        }

        /// The latest finish that a window has passed by `date`.
        private static func cutoff(_ date: Date, _ window: Duration) -> Date {
            date.addingTimeInterval(-window.relaySeconds)
        }

        /// Drops a finished operation from the state.
        private mutating func forget(_ id: UUID) {
            guard let index = operationIndex.removeValue(forKey: id) else { return }
            operations[index] = nil
            forgottenCount += 1
        }

        /// Compacts the operations once half are forgotten, so that forgotten operations cost no more than live ones.
        private mutating func compactIfHalfForgotten() {
            guard forgottenCount > 1024, forgottenCount * 2 > operations.count else { return }
            operations.removeAll { $0 == nil }
            forgottenCount = 0
            operationIndex.removeAll(keepingCapacity: true)
            for (index, entry) in operations.enumerated() {
                if let entry { operationIndex[entry.operation.id] = index }
            }
        }

        /// The folded state; operations that finished a window or more before the latest record are forgotten, so
        /// that a window of zero keeps none, and so are the oldest finished ones beyond the policy's bounds.
        ///
        /// Consuming, so that a million operations move into the state instead of being copied.
        ///
        /// - Parameter retention: What the DataPoint keeps of finished operations, when the replay was not given it;
        ///   `nil` keeps what the replay's own policy, if any, kept.
        /// - Returns: The state to reopen from.
        public consuming func state(retention: RetentionPolicy? = nil) -> StoredState {
            var operations = operations.compactMap { $0 }
            if let retention = retention ?? self.retention {
                let kept = Self.keptFinished(operations, under: retention.finishedBounds, latest: latestDate) {
                    !RetentionPolicy.isDeadLetter($0)
                }
                let keptDeadLetters = Self.keptFinished(
                    operations, under: retention.deadLetterBounds, latest: latestDate
                ) {
                    RetentionPolicy.isDeadLetter($0)
                }
                operations.removeAll { entry in
                    entry.finishedAt != nil && !kept.contains(entry.operation.id)
                        && !keptDeadLetters.contains(entry.operation.id)
                }
            }
            return StoredState(
                lastSnapshot: lastSnapshot,
                operations: operations,
                sequences: sequences,
                suspensionCount: suspensionCount,
                models: models.filter { !$0.value.isEmpty }
            )
        }

        /// The finished operations of one class that a DataPoint keeps: those within the window, newest first, while
        /// they fit the bounds.
        private static func keptFinished(
            _ operations: [StoredOperation], under retention: RetentionPolicy.Bounds, latest: Date?,
            of inClass: (CallResult) -> Bool
        ) -> Set<UUID> {
            let oldestKept = latest.map { Self.cutoff($0, retention.window) }
            var finished = operations.filter { entry in
                guard let finishedAt = entry.finishedAt, let result = entry.result, inClass(result) else {
                    return false
                }
                return oldestKept.map { finishedAt > $0 } ?? true
            }
            finished.sort { $0.finishedAt! > $1.finishedAt! }
            var kept = Set<UUID>()
            var bytes = 0
            for entry in finished {
                guard let result = entry.result else { continue }
                bytes += RetentionPolicy.retainedSize(payload: entry.operation.payload.count, result: result)
                guard kept.count < retention.maximumOperations, bytes <= retention.maximumBytes else { break }
                kept.insert(entry.operation.id)
            }
            return kept
        }

        private mutating func update(_ id: UUID, _ change: (inout StoredOperation) -> Void) {
            guard let index = operationIndex[id], operations[index] != nil else { return }
            change(&operations[index]!)
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
