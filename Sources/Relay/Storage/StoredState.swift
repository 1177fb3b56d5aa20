import Foundation

/// The state a store holds, from which a DataPoint rebuilds its pipeline when it opens.
public struct StoredState: Sendable {
    /// The highest snapshot ever assigned; new commits continue after it.
    public var lastSnapshot: UInt64
    /// Operations, oldest commit first and in call order within a commit.
    public var operations: [StoredOperation]
    /// Sequences that were configured.
    public var sequences: [StoredSequence]
    /// The suspension count of the whole DataPoint.
    public var suspensionCount: Int
    /// The document's models: encoded forms by id, by collection.
    public var models: [String: [String: Data]]
    /// What the store found and repaired while opening, for stores that recover from a journal.
    public var recovery: RecoveryReport?

    /// Creates a stored state.
    ///
    /// - Parameters:
    ///   - lastSnapshot: The highest snapshot assigned.
    ///   - operations: Operations in commit order.
    ///   - sequences: Configured sequences.
    ///   - suspensionCount: The DataPoint's suspension count.
    ///   - models: The document's models, encoded, by id and collection.
    public init(
        lastSnapshot: UInt64 = 0,
        operations: [StoredOperation] = [],
        sequences: [StoredSequence] = [],
        suspensionCount: Int = 0,
        models: [String: [String: Data]] = [:]
    ) {
        self.lastSnapshot = lastSnapshot
        self.operations = operations
        self.sequences = sequences
        self.suspensionCount = suspensionCount
        self.models = models
    }

    /// The state of a new store.
    public static let empty = StoredState()
}

/// One stored operation and where it was in its life.
public struct StoredOperation: Sendable {
    /// The operation with its snapshot set.
    public var operation: CallOperation
    /// Attempts that started, including one that was running when the process stopped.
    public var attempts: Int
    /// When it was enqueued.
    public var enqueuedAt: Date
    /// When its first attempt started.
    public var firstStartedAt: Date?
    /// Its terminal state, if it reached one.
    public var result: CallResult?
    /// When it reached its terminal state.
    public var finishedAt: Date?
    /// When its next attempt may start, if a retry is scheduled.
    public var retryAt: Date?
    /// Its holds by context (`nil` is the default context).
    public var holds: [String?: Date]
    /// The failure of its last attempt that asked for a retry, with its response, if any: kept after a cancellation
    /// too, so that a dead letter says why its attempts failed.
    public var lastFailure: CallFailure?
    /// How many times its request went out and got no answer, its attempt given back rather than counted (a
    /// destination found offline): it was sent `attempts + unansweredSends` times.
    public var unansweredSends: Int
    /// How long its attempts ran, all together, once it finished; zero when the store did not say.
    public var runTime: Duration

    /// Creates a stored operation.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - snapshot: The commit that enqueued it.
    ///   - attempts: Attempts that started.
    ///   - enqueuedAt: When it was enqueued.
    ///   - firstStartedAt: When its first attempt started.
    ///   - result: Its terminal state.
    ///   - finishedAt: When it finished.
    ///   - retryAt: When its next attempt may start.
    ///   - holds: Its holds by context.
    ///   - lastFailure: The failure of its last attempt that asked for a retry.
    ///   - unansweredSends: How many times its request went out without an answer, uncounted.
    ///   - runTime: How long its attempts ran, all together.
    public init(
        operation: CallOperation,
        snapshot: UInt64,
        attempts: Int = 0,
        enqueuedAt: Date,
        firstStartedAt: Date? = nil,
        result: CallResult? = nil,
        finishedAt: Date? = nil,
        retryAt: Date? = nil,
        holds: [String?: Date] = [:],
        lastFailure: CallFailure? = nil,
        unansweredSends: Int = 0,
        runTime: Duration = .zero
    ) {
        self.operation = operation
        self.operation.snapshot = snapshot
        self.attempts = attempts
        self.enqueuedAt = enqueuedAt
        self.firstStartedAt = firstStartedAt
        self.result = result
        self.finishedAt = finishedAt
        self.retryAt = retryAt
        self.holds = holds
        self.lastFailure = lastFailure
        self.unansweredSends = unansweredSends
        self.runTime = runTime
    }
}

/// One stored sequence configuration.
public struct StoredSequence: Sendable, Hashable {
    /// The sequence's name.
    public var name: CallSequence.Name
    /// Its bunch size.
    public var bunchSize: Int
    /// Its ordering algorithm.
    public var algorithm: CallSequence.Algorithm
    /// Its suspension count.
    public var suspensionCount: Int

    /// Creates a stored sequence.
    ///
    /// - Parameters:
    ///   - name: The sequence's name.
    ///   - bunchSize: Its bunch size.
    ///   - algorithm: Its ordering algorithm.
    ///   - suspensionCount: Its suspension count.
    public init(name: CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm, suspensionCount: Int) {
        self.name = name
        self.bunchSize = bunchSize
        self.algorithm = algorithm
        self.suspensionCount = suspensionCount
    }
}
