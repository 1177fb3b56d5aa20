import Foundation

/// How long, and how many of, finished operations a DataPoint and its store keep so that handles can still read
/// their outcomes.
///
/// An operation is kept until its ``window`` has passed, unless keeping it would put more than ``maximumOperations``
/// finished operations, or more than ``maximumBytes`` of their payloads and results, in memory: then the oldest go
/// first, window or not. The bounds keep a server's memory flat however long its window: at a thousand calls a
/// second, an hour is 3.6 million outcomes. A store drops what the DataPoint drops when it folds its state, so a
/// restart finds the same operations.
public struct RetentionPolicy: Sendable, Hashable {
    /// How long an operation is kept after it finishes.
    public var window: Duration
    /// The most finished operations kept.
    public var maximumOperations: Int
    /// The most bytes of finished operations kept, counted as ``retainedSize(payload:result:)`` counts them.
    public var maximumBytes: Int

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - window: How long an operation is kept after it finishes; an hour by default.
    ///   - maximumOperations: The most finished operations kept; 100,000 by default.
    ///   - maximumBytes: The most bytes of finished operations kept; 64 MiB by default.
    public init(
        window: Duration = .seconds(3600),
        maximumOperations: Int = 100_000,
        maximumBytes: Int = 64 << 20
    ) {
        self.window = window
        self.maximumOperations = maximumOperations
        self.maximumBytes = maximumBytes
    }

    /// A policy that keeps operations for `window`, however many.
    ///
    /// - Parameter window: How long an operation is kept after it finishes.
    /// - Returns: The policy.
    public static func window(_ window: Duration) -> RetentionPolicy {
        RetentionPolicy(window: window, maximumOperations: .max, maximumBytes: .max)
    }

    /// What a finished operation counts toward ``maximumBytes``: its payload, its result's data (a completed value or
    /// a failure's response body), and 512 bytes for the rest of it.
    ///
    /// - Parameters:
    ///   - payload: The operation's payload size.
    ///   - result: Its result.
    /// - Returns: The bytes it counts for.
    public static func retainedSize(payload: Int, result: CallResult) -> Int {
        let resultBytes =
            switch result {
            case .completed(let data): data.count
            case .failed(let failure): failure.response?.body.count ?? 0
            case .skipped, .cancelled: 0
            }
        return 512 + payload + resultBytes
    }
}
