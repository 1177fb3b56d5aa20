import Foundation

/// One state transition, as the pipeline records it.
///
/// Records never contain credentials: operations carry none, and executors apply them at send time.
public enum StorageRecord: Sendable, Hashable {
    /// A commit: the operations enqueued by one call, in call order, all with `snapshot` set.
    case commit(snapshot: UInt64, operations: [CallOperation], at: Date)
    /// An attempt started.
    case started(UUID, attempt: Int, at: Date)
    /// An attempt ended and another is scheduled.
    case retryScheduled(UUID, attempt: Int, at: Date)
    /// An attempt was interrupted by shutdown; the operation is pending again with the attempt counted.
    case interrupted(UUID, at: Date)
    /// The attempt did not count, because the host could not be reached; the operation has `attempts` attempts.
    case attemptReturned(UUID, attempts: Int)
    /// The operation reached its terminal state.
    case finished(UUID, CallResult, at: Date)
    /// A hold was set, or released when `until` is `nil`.
    case held(UUID, until: Date?, context: String?)
    /// A sequence was added or reconfigured.
    case sequenceConfigured(CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm)
    /// A sequence's suspension count changed; `nil` names the whole DataPoint.
    case suspensionChanged(CallSequence.Name?, count: Int)
}
