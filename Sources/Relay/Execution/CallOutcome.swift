import Foundation

/// What an executor reports for one attempt.
///
/// `completed`, `skipped` and `failed` end the operation; `retry` asks for another attempt, which the operation's
/// ``RetryPolicy`` grants or turns into `failed`.
public enum CallOutcome: Sendable, Hashable {
    /// The work is done; the data becomes the handle's ``CallHandle/value``.
    case completed(Data)
    /// The work was not needed. Dependents proceed as if it had completed.
    case skipped
    /// The attempt failed in a way worth retrying, after `after` if given, or else after the policy's backoff.
    case retry(after: Duration? = nil, reason: String)
    /// The operation failed for good; no further attempt is made.
    case failed(reason: String)
    /// The attempt could not reach its destination: the attempt does not count, the operation goes back to the
    /// front of its sequence, and the sequence suspends until the executor's ``CallExecutor/probe(_:)`` answers.
    ///
    /// Events report the sequence `suspended` and, once a probe succeeds, `resumed`, with the reason.
    case offline(reason: String)
}

/// What an executor knows about the attempt it runs, and where it reports what the attempt observed.
public struct CallContext: Sendable, Hashable {
    /// The attempt number, starting at 1; attempts interrupted by a crash or shutdown count.
    public let attempt: Int
    /// When the attempt started, on the DataPoint's clock.
    public let startedAt: Date
    let operationID: UUID
    private let explicitIdempotencyKey: String?
    /// Set by the worker that runs the attempt.
    var recorder: AttemptRecorder?

    init(attempt: Int, startedAt: Date, operation: CallOperation) {
        self.attempt = attempt
        self.startedAt = startedAt
        operationID = operation.id
        explicitIdempotencyKey = operation.explicitIdempotencyKey
    }

    /// The operation's idempotency key, the same across attempts and restarts.
    public var idempotencyKey: String {
        explicitIdempotencyKey ?? CallOperation.derivedIdempotencyKey(operationID)
    }

    /// Hands over what this attempt observed, before returning its outcome.
    ///
    /// The engine publishes it as ``CallEvent/Kind/attemptEnded(_:)`` and puts its measurements on the operation's
    /// ``CallMetrics``. A later call replaces an earlier one; a call after the attempt ended is ignored.
    ///
    /// - Parameter report: What the attempt observed; its ``AttemptReport/attempt`` is set from this context.
    public func report(_ report: AttemptReport) {
        var report = report
        report.attempt = attempt
        recorder?.record(report, for: operationID)
    }

    /// Whether two contexts describe the same attempt.
    public static func == (lhs: CallContext, rhs: CallContext) -> Bool {
        lhs.attempt == rhs.attempt && lhs.startedAt == rhs.startedAt && lhs.operationID == rhs.operationID
            && lhs.explicitIdempotencyKey == rhs.explicitIdempotencyKey
    }

    /// Hashes the attempt's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(attempt)
        hasher.combine(startedAt)
        hasher.combine(operationID)
        hasher.combine(explicitIdempotencyKey)
    }
}
