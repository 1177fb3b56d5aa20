import Foundation

/// Something that happened in a DataPoint, delivered by ``DataPoint/events(bufferSize:)``.
///
/// Events carry a sequence number that increases strictly across the DataPoint, so a subscriber can order them and
/// see gaps. A subscriber that falls behind loses the oldest buffered events and receives a ``Kind/dropped(_:)``
/// event in their place.
public struct CallEvent: Sendable, Hashable {
    /// What happened.
    ///
    /// An open enum: a release may report more kinds of event (`offline`, `online` and `modelChanged` came so), so a
    /// `switch` over it needs a `default`. It stays an enum because its cases carry values that patterns bind.
    public enum Kind: Sendable, Hashable {
        /// The operation was enqueued in the given commit.
        case enqueued(snapshot: UInt64)
        /// An attempt started: its executor ran it.
        ///
        /// Dated when the attempt was handed to a worker. An operation that a worker claimed behind another, in a
        /// batch of fast operations, is reported once the worker has run it, just before the event that ends the
        /// attempt; one that the worker gave back unrun (because the sequence was suspended meanwhile, say) is not
        /// reported, so counting these events counts the executor's calls.
        case started(attempt: Int)
        /// An attempt ended and its executor reported what it observed: for HTTP, the response or the error.
        ///
        /// Published before the event that follows from the attempt: completed, retryScheduled, failed, or its
        /// destination's going offline.
        case attemptEnded(AttemptReport)
        /// The operation completed.
        case completed(CallMetrics)
        /// The operation was skipped.
        case skipped(CallMetrics)
        /// An attempt failed and another is scheduled.
        case retryScheduled(attempt: Int, at: Date, reason: String)
        /// The operation failed for good.
        case failed(CallFailure, CallMetrics)
        /// The operation was cancelled.
        case cancelled(CallCancellation, CallMetrics)
        /// A hold was set (`until` non-nil) or released (`until` nil) for the given context.
        case held(until: Date?, context: String?)
        /// A sequence, or the whole DataPoint when ``CallEvent/sequenceName`` is `nil`, stopped starting operations.
        case suspended(reason: String)
        /// A sequence, or the whole DataPoint, starts operations again.
        case resumed(reason: String)
        /// An operation of the sequence could not reach `destination` (for HTTP, its scheme, host and port): the
        /// sequence's operations to it wait, their attempts given back, while its other destinations go on.
        ///
        /// `reason` is what the executor said, which names the destination too.
        case offline(destination: String, reason: String)
        /// The sequence's operations to `destination` may start again: its probe answered, or no operation waits for
        /// it any more.
        case online(destination: String, reason: String)
        /// A transaction upserted or removed a model (see ``DataPoint/changes(in:bufferSize:)``), or an erasure
        /// cascaded to it.
        case modelChanged(DocumentChange)
        /// This subscriber's buffer was full and this many older events were dropped.
        ///
        /// It names the operations whose terminal event was dropped, so that an observer that counts terminal
        /// events still learns that they finished (see ``DroppedEvents``).
        case dropped(DroppedEvents)
        /// The DataPoint reopened a store and rebuilt its pipeline; published once, when it starts running.
        case recovered(RecoveryReport)

        /// Whether the kind ends its operation's life.
        public var isTerminal: Bool {
            switch self {
            case .completed, .skipped, .failed, .cancelled: true
            default: false
            }
        }
    }

    /// The position of the event in the DataPoint's history; strictly increasing.
    public let sequenceNumber: UInt64
    /// When it happened, on the DataPoint's clock.
    public let date: Date
    /// The operation it concerns, if any.
    public let operationID: UUID?
    /// The sequence it concerns, if any.
    public let sequenceName: CallSequence.Name?
    /// What happened.
    public let kind: Kind
}
