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

extension CallOutcome: CustomStringConvertible {
    /// `completed (12 B)`, `skipped`, `retry after 2 s: busy`, `failed: no stock`, `offline: connection refused`.
    public var description: String {
        switch self {
        case .completed(let data): "completed (\(data.count.readableBytes))"
        case .skipped: "skipped"
        case .retry(let delay?, let reason): "retry after \(delay.readable): \(reason)"
        case .retry(nil, let reason): "retry: \(reason)"
        case .failed(let reason): "failed: \(reason)"
        case .offline(let reason): "offline: \(reason)"
        }
    }
}
