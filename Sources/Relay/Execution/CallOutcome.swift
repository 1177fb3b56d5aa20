import Foundation

/// What an executor reports for one attempt.
///
/// `completed`, `skipped` and `failed` end the operation; `retry` asks for another attempt, which the operation's
/// ``RetryPolicy`` grants or turns into `failed`.
///
/// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
public enum CallOutcome: Sendable, Hashable {
    /// The work is done; the data becomes the handle's ``CallHandle/value``.
    case completed(Data)
    /// The work was not needed. Dependents proceed as if it had completed.
    case skipped
    /// The attempt failed in a way worth retrying, after `after` if given, or else after the policy's backoff.
    case retry(after: Duration? = nil, reason: String)
    /// The operation failed for good; no further attempt is made.
    case failed(reason: String)
    /// The attempt could not reach its destination: the attempt does not count, and the operation waits, with every
    /// other operation of its sequence to the same destination, until the executor's ``CallExecutor/probe(_:)``
    /// answers. The sequence's other destinations go on.
    ///
    /// An HTTP call's destination is its scheme, host and port; another kind's is the kind. Events report the
    /// destination ``CallEvent/Kind/offline(destination:reason:)`` and, once a probe answers,
    /// ``CallEvent/Kind/online(destination:reason:)``. Time offline counts toward the retry policy's
    /// ``RetryPolicy/maximumElapsed``; and after three rounds in which the probe answered at once yet the operation
    /// came back offline, its offline outcomes spend attempts like ``retry(after:reason:)``.
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
