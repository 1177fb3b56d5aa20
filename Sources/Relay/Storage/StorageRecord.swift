import Foundation

/// One state transition, as the pipeline records it.
///
/// A store keeps records and gives them back, oldest first, when it opens; it need not understand them. Save
/// ``encoded()`` and read it back with ``init(encoded:)``, and fold records into the state to reopen from with
/// ``StoredState/Replay``. New kinds of records may be added without breaking the API: switch on ``kind`` with a
/// `default` case.
///
/// Records never contain credentials: operations carry none, and executors apply them at send time.
public struct StorageRecord: Sendable, Hashable, CustomStringConvertible {
    /// What a record reports; new kinds may be added without breaking the API.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String, Sendable, Hashable {
            case commit, started, retryScheduled, interrupted, attemptReturned, finished, held, sequenceConfigured
            case suspensionChanged, models, purged
        }

        private let value: Value

        private init(_ value: Value) {
            self.value = value
        }

        /// Operations enqueued by one call, in call order.
        public static let commit = Kind(.commit)
        /// An attempt started.
        public static let started = Kind(.started)
        /// An attempt ended and another is scheduled.
        public static let retryScheduled = Kind(.retryScheduled)
        /// Shutdown interrupted an attempt; the operation is pending again with the attempt counted.
        public static let interrupted = Kind(.interrupted)
        /// An attempt was given back without counting.
        public static let attemptReturned = Kind(.attemptReturned)
        /// An operation reached its terminal state.
        public static let finished = Kind(.finished)
        /// A hold was set or released.
        public static let held = Kind(.held)
        /// A sequence was added or reconfigured.
        public static let sequenceConfigured = Kind(.sequenceConfigured)
        /// A sequence's suspension count, or the whole DataPoint's, changed.
        public static let suspensionChanged = Kind(.suspensionChanged)
        /// Models were upserted or removed, in the same transition as the commit of the same number, if any.
        public static let models = Kind(.models)
        /// Finished operations were purged before their retention passed.
        public static let purged = Kind(.purged)

        /// The kind's name, such as `finished`.
        public var description: String { value.rawValue }
    }

    /// The transition and what it carries.
    enum Change: Sendable, Hashable {
        /// The operations enqueued by one call, in call order, all with `snapshot` set.
        case commit(snapshot: UInt64, operations: [CallOperation], at: Date)
        case started(UUID, attempt: Int, at: Date)
        /// An attempt ended and another is scheduled; `failure` is why the attempt did not succeed, if recorded.
        case retryScheduled(UUID, attempt: Int, at: Date, failure: CallFailure?)
        case interrupted(UUID, at: Date)
        /// The operation has `attempts` attempts after one was given back; `sent` when the attempt had sent its
        /// request, which got no answer (a destination found offline), rather than been given back before it began.
        case attemptReturned(UUID, attempts: Int, sent: Bool)
        /// `ran` is how long its attempts ran, in nanoseconds, all together. `changes` are what the attempt staged,
        /// which a shared store commits with the outcome under a number of its own (S21); a store that keeps records
        /// gets them in a `models` record of the operation's snapshot instead, and this is empty.
        case finished(UUID, CallResult, at: Date, ran: Int64, changes: [ModelChange] = [])
        /// A hold was set, or released when `until` is `nil`.
        case held(UUID, until: Date?, context: String?)
        case sequenceConfigured(CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm)
        /// `nil` names the whole DataPoint.
        case suspensionChanged(CallSequence.Name?, count: Int)
        /// A transaction's model changes, in order, under its snapshot number.
        case models(snapshot: UInt64, changes: [ModelChange], at: Date)
        /// Finished operations removed before their retention passed.
        case purged([UUID], at: Date)
    }

    let change: Change

    init(_ change: Change) {
        self.change = change
    }

    /// What the record reports.
    public var kind: Kind {
        switch change {
        case .commit: .commit
        case .started: .started
        case .retryScheduled: .retryScheduled
        case .interrupted: .interrupted
        case .attemptReturned: .attemptReturned
        case .finished: .finished
        case .held: .held
        case .sequenceConfigured: .sequenceConfigured
        case .suspensionChanged: .suspensionChanged
        case .models: .models
        case .purged: .purged
        }
    }

    /// The operation the record is about; `nil` for commits, which may hold many, and for sequences.
    public var operationID: UUID? {
        switch change {
        case .started(let id, _, _), .retryScheduled(let id, _, _, _), .interrupted(let id, _),
            .attemptReturned(let id, _, _), .finished(let id, _, _, _, _), .held(let id, _, _):
            id
        case .commit, .sequenceConfigured, .suspensionChanged, .models, .purged:
            nil
        }
    }

    /// A commit's snapshot number, or a model change's; `nil` for other kinds.
    public var snapshot: UInt64? {
        switch change {
        case .commit(let snapshot, _, _), .models(let snapshot, _, _): snapshot
        default: nil
        }
    }

    /// The model changes a transaction made, in order, or those a completion commits with its outcome on a shared
    /// store (S21); empty for other kinds.
    public var modelChanges: [ModelChange] {
        switch change {
        case .models(_, let changes, _), .finished(_, _, _, _, let changes): changes
        default: []
        }
    }

    /// The operations a purge removed; empty for other kinds.
    public var purgedOperationIDs: [UUID] {
        guard case .purged(let ids, _) = change else { return [] }
        return ids
    }

    /// The operations a commit enqueued, in call order; empty for other kinds.
    public var operations: [CallOperation] {
        guard case .commit(_, let operations, _) = change else { return [] }
        return operations
    }

    /// When the transition happened, for records that say.
    public var date: Date? {
        switch change {
        case .commit(_, _, let date), .started(_, _, let date), .interrupted(_, let date),
            .finished(_, _, let date, _, _),
            .models(_, _, let date), .purged(_, let date):
            date
        case .retryScheduled, .attemptReturned, .held, .sequenceConfigured, .suspensionChanged:
            nil
        }
    }

    /// The record's kind and the operation or sequence it is about, for logs.
    public var description: String {
        switch change {
        case .commit(let snapshot, let operations, _): "commit \(snapshot) of \(operations.count) operations"
        case .sequenceConfigured(let name, _, _): "sequenceConfigured \(name)"
        case .suspensionChanged(let name, let count): "suspensionChanged \(name?.rawValue ?? "all") to \(count)"
        case .models(let snapshot, let changes, _): "models of \(snapshot): \(changes.count) changes"
        case .purged(let ids, _): "purged \(ids.count) operations"
        default: "\(kind) \(operationID.map(\.uuidString) ?? "")"
        }
    }

    // MARK: - Encoding

    /// The record in Relay's compact binary form, which ``init(encoded:)`` reads back.
    ///
    /// The form is versioned with the file store's format: a later version of Relay reads what an earlier one wrote.
    public func encoded() -> Data {
        var writer = ByteWriter()
        RecordCodec.encode(self, into: &writer)
        return Data(writer.bytes)
    }

    /// Reads a record that ``encoded()`` wrote.
    ///
    /// - Parameter encoded: The bytes of one record, and nothing else.
    /// - Throws: ``RelayError`` with code ``RelayError/Code/corruptStore`` when the bytes are not one whole record.
    public init(encoded: Data) throws(RelayError) {
        let record = encoded.withUnsafeBytes { (bytes) -> StorageRecord? in
            var reader = ByteReader(bytes)
            guard let record = try? RecordCodec.decodeRecord(from: &reader), reader.isAtEnd else { return nil }
            return record
        }
        guard let record else {
            throw RelayError(.corruptStore, "the \(encoded.count) bytes are not one whole storage record")
        }
        self = record
    }
}

// The pipeline builds records with these, as it built the cases of the enum they replace.
extension StorageRecord {
    static func commit(snapshot: UInt64, operations: [CallOperation], at date: Date) -> Self {
        Self(.commit(snapshot: snapshot, operations: operations, at: date))
    }

    static func started(_ id: UUID, attempt: Int, at date: Date) -> Self {
        Self(.started(id, attempt: attempt, at: date))
    }

    static func retryScheduled(_ id: UUID, attempt: Int, at date: Date, failure: CallFailure? = nil) -> Self {
        Self(.retryScheduled(id, attempt: attempt, at: date, failure: failure))
    }

    static func interrupted(_ id: UUID, at date: Date) -> Self {
        Self(.interrupted(id, at: date))
    }

    static func attemptReturned(_ id: UUID, attempts: Int, sent: Bool = false) -> Self {
        Self(.attemptReturned(id, attempts: attempts, sent: sent))
    }

    static func finished(
        _ id: UUID, _ result: CallResult, at date: Date, ran: Int64 = 0, changes: [ModelChange] = []
    ) -> Self {
        Self(.finished(id, result, at: date, ran: ran, changes: changes))
    }

    static func purged(_ ids: [UUID], at date: Date) -> Self {
        Self(.purged(ids, at: date))
    }

    static func held(_ id: UUID, until: Date?, context: String?) -> Self {
        Self(.held(id, until: until, context: context))
    }

    static func sequenceConfigured(
        _ name: CallSequence.Name,
        bunchSize: Int,
        algorithm: CallSequence.Algorithm
    ) -> Self {
        Self(.sequenceConfigured(name, bunchSize: bunchSize, algorithm: algorithm))
    }

    static func suspensionChanged(_ name: CallSequence.Name?, count: Int) -> Self {
        Self(.suspensionChanged(name, count: count))
    }
}
