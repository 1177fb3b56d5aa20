import Foundation

/// How an operation ended: the terminal state, which never changes once reached.
///
/// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
public enum CallResult: Sendable, Hashable {
    /// The executor completed the work with this result.
    case completed(Data)
    /// The executor skipped the work.
    case skipped
    /// The operation failed: the executor said so, or the retry policy gave up.
    ///
    /// Boxed: a failure keeps a response, and held inline it would grow every slot and stored operation that keeps a
    /// result, though failures are rare.
    indirect case failed(CallFailure)
    /// The operation was cancelled, by request or because a dependency failed or was cancelled.
    case cancelled(CallCancellation)
}

/// Why an operation was cancelled.
///
/// A closed enum: an operation is cancelled because it was asked to be, or because a dependency did not complete; these
/// cases are the whole set, and a `switch` over them needs no `default`.
public enum CallCancellation: Sendable, Hashable, Codable, CustomStringConvertible {
    /// ``DataPoint/cancel(_:)`` was called for it.
    case requested
    /// The named dependency finished `failed`.
    case dependencyFailed(UUID)
    /// The named dependency finished `cancelled`.
    case dependencyCancelled(UUID)

    /// A sentence naming the cause.
    public var description: String {
        switch self {
        case .requested: "cancelled by request"
        case .dependencyFailed(let id): "dependency \(id) failed"
        case .dependencyCancelled(let id): "dependency \(id) was cancelled"
        }
    }
}

extension CallResult: CustomStringConvertible {
    /// `completed (12 B)`, `skipped`, `failed: no stock (after 1 attempt)`, `cancelled by request`.
    public var description: String {
        switch self {
        case .completed(let data): "completed (\(data.count.readableBytes))"
        case .skipped: "skipped"
        case .failed(let failure): "failed: \(failure)"
        case .cancelled(.requested): "cancelled by request"
        case .cancelled(let cancellation): "cancelled: \(cancellation)"
        }
    }
}
