import Foundation

/// How long, and how many of, finished operations a DataPoint and its store keep so that handles can still read
/// their outcomes, and so that failed and cancelled ones can be listed and replayed.
///
/// A completed or skipped operation is kept until its ``window`` has passed, unless keeping it would put more than
/// ``maximumOperations`` of them, or more than ``maximumBytes`` of their payloads and results, in memory: then the
/// oldest go first, window or not. The bounds keep a server's memory flat however long its window: at a thousand
/// calls a second, an hour is 3.6 million outcomes.
///
/// Failed and cancelled operations are the dead-letter set: they are kept under bounds of their own,
/// ``deadLetterWindow``, ``maximumDeadLetters`` and ``maximumDeadLetterBytes``, a week and 10,000 by default, with
/// their last error and last response, so that an operator can see what failed and why, and replay it (see
/// ``DataPoint/replay(_:)``), long after successes are gone. ``DataPoint/purge(_:)`` removes them sooner.
///
/// A store drops what the DataPoint drops when it folds its state, so a restart finds the same operations.
public struct RetentionPolicy: Sendable, Hashable {
    /// How long a completed or skipped operation is kept after it finishes.
    public var window: Duration
    /// The most completed or skipped operations kept.
    public var maximumOperations: Int
    /// The most bytes of completed or skipped operations kept, counted as ``retainedSize(payload:result:)`` counts
    /// them.
    public var maximumBytes: Int
    /// How long a failed or cancelled operation is kept after it ends.
    public var deadLetterWindow: Duration
    /// The most failed or cancelled operations kept.
    public var maximumDeadLetters: Int
    /// The most bytes of failed or cancelled operations kept, counted as ``retainedSize(payload:result:)`` counts them.
    public var maximumDeadLetterBytes: Int

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - window: How long a completed or skipped operation is kept after it finishes; an hour by default.
    ///   - maximumOperations: The most completed or skipped operations kept; 100,000 by default.
    ///   - maximumBytes: The most bytes of completed or skipped operations kept; 64 MiB by default.
    ///   - deadLetterWindow: How long a failed or cancelled operation is kept; a week by default.
    ///   - maximumDeadLetters: The most failed or cancelled operations kept; 10,000 by default.
    ///   - maximumDeadLetterBytes: The most bytes of failed or cancelled operations kept; 64 MiB by default.
    public init(
        window: Duration = .seconds(3600),
        maximumOperations: Int = 100_000,
        maximumBytes: Int = 64 << 20,
        deadLetterWindow: Duration = .seconds(7 * 86_400),
        maximumDeadLetters: Int = 10_000,
        maximumDeadLetterBytes: Int = 64 << 20
    ) {
        self.window = window
        self.maximumOperations = maximumOperations
        self.maximumBytes = maximumBytes
        self.deadLetterWindow = deadLetterWindow
        self.maximumDeadLetters = maximumDeadLetters
        self.maximumDeadLetterBytes = maximumDeadLetterBytes
    }

    /// A policy that keeps every finished operation, dead letter or not, for `window`, however many.
    ///
    /// - Parameter window: How long an operation is kept after it finishes.
    /// - Returns: The policy.
    public static func window(_ window: Duration) -> RetentionPolicy {
        RetentionPolicy(
            window: window, maximumOperations: .max, maximumBytes: .max,
            deadLetterWindow: window, maximumDeadLetters: .max, maximumDeadLetterBytes: .max)
    }

    /// Whether a result makes its operation a dead letter, kept under the dead-letter bounds: failed or cancelled.
    ///
    /// - Parameter result: A finished operation's result.
    /// - Returns: Whether it is a dead letter.
    public static func isDeadLetter(_ result: CallResult) -> Bool {
        switch result {
        case .failed, .cancelled: true
        case .completed, .skipped: false
        }
    }

    /// The window and bounds that keep an operation of either class.
    struct Bounds: Sendable, Hashable {
        var window: Duration
        var maximumOperations: Int
        var maximumBytes: Int
    }

    /// The bounds of completed and skipped operations.
    var finishedBounds: Bounds {
        Bounds(window: window, maximumOperations: maximumOperations, maximumBytes: maximumBytes)
    }

    /// The bounds of the dead-letter set.
    var deadLetterBounds: Bounds {
        Bounds(window: deadLetterWindow, maximumOperations: maximumDeadLetters, maximumBytes: maximumDeadLetterBytes)
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
